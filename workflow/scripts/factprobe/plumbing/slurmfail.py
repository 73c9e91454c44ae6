"""One console line per SLURM job that failed, with its cause and what to change.

The SLURM executor plugin reports a failed job as ``SLURM-job 'N' failed, SLURM status is:
'TIMEOUT'`` and the path of the job's SLURM log; without ``sacct`` (no accounting daemon) it adds
no reason at all, and the state alone does not tell a memory kill from a crash. The Snakefile's
``onerror`` handler hands the run's Snakemake log to :func:`explain`, which reads each failed
job's SLURM log for the lines slurmstepd writes (``CANCELLED ... DUE TO TIME LIMIT``, ``exceeded
memory limit`` or ``oom-kill``, a bare ``CANCELLED``) and the resources Snakemake printed for
the job, and returns lines such as::

    factprobe: rule score_shard (knowledge_control_0) hit its SLURM time limit (runtime=1 min,
    SLURM job 12): raise set-resources score_shard: runtime in profiles/slurm/profile.yaml
    and rerun (SLURM log .snakemake/slurm_logs/...)

naming the ``--workflow-profile`` of the run (a site's copy of profiles/slurm, docs/slurm.md).

Standard library only: the Snakefile imports it while parsing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from factprobe.plumbing.slurmfit import refused_submissions

ERROR = re.compile(r"^Error in rule (\w+):$", re.M)
SLURM_FAILED = re.compile(r"SLURM-job '(\d+)' failed, SLURM status is: '(\w+)'")
SLURM_LOG = re.compile(r"(\S*slurm_logs/\S+?\.log)")
RESOURCES = re.compile(r"^\s*resources: (.*)$", re.M)
TIME_LIMIT = re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT")
MEMORY = re.compile(r"exceeded (?:job )?memory limit|oom[-_ ]kill|Out Of Memory", re.I)
CANCELLED = re.compile(r"\*\*\* JOB \d+ ON \S+ CANCELLED AT \S+ \*\*\*")
OWN_LINE = re.compile(r"^factprobe: .*$", re.M)
#: A job as Snakemake prints it when it submits it: ``rule x:`` and its indented fields.
JOB_BLOCK = re.compile(r"^(?:local)?rule (\w+):\n((?:    .*\n?)+)", re.M)
JOBID = re.compile(r"^\s*jobid: (\d+)$", re.M)
DEFAULT_PROFILE = "profiles/slurm"


@dataclass(frozen=True)
class FailedJob:
    """A job the SLURM executor reported as failed, from the Snakemake log."""

    rule: str
    job_id: str
    state: str
    slurm_log: str | None
    #: The resources Snakemake printed when it submitted the job (name -> value).
    resources: dict[str, str] = field(default_factory=dict)


def failed_jobs(snakemake_log: str) -> list[FailedJob]:
    """The SLURM jobs an executor run reported failed, in log order; a job retried (the profile's
    ``retries``) once, as its last attempt."""
    submitted = submitted_resources(snakemake_log)
    found = list(ERROR.finditer(snakemake_log))
    ends = [m.start() for m in found[1:]] + [len(snakemake_log)] if found else []
    out: dict[tuple[str, str], FailedJob] = {}
    for match, end in zip(found, ends, strict=True):
        rule, block = match.group(1), snakemake_log[match.start() : end]
        failed = SLURM_FAILED.search(block)
        if failed is None:
            continue
        log = SLURM_LOG.search(block[failed.end() :]) or SLURM_LOG.search(block)
        job_id, state = failed.groups()
        jobid = JOBID.search(block)
        resources = submitted.get((rule, jobid.group(1))) if jobid else None
        slurm_log = log.group(1) if log else None
        # attempts of one job share their SLURM log folder (.../rule_<rule>/<wildcards>/)
        key = (rule, str(Path(slurm_log).parent)) if slurm_log else (rule, job_id)
        out.pop(key, None)
        out[key] = FailedJob(rule, job_id, state, slurm_log, resources or {})
    return list(out.values())


def submitted_resources(snakemake_log: str) -> dict[tuple[str, str], dict[str, str]]:
    """(rule, Snakemake jobid) -> the resources Snakemake printed for the job (the values the
    job was submitted with; the job's SLURM log holds them too, unless it died first)."""
    out = {}
    for match in JOB_BLOCK.finditer(snakemake_log):
        jobid = JOBID.search(match.group(2))
        if jobid:
            out[(match.group(1), jobid.group(1))] = job_resources(match.group(2))
    return out


def job_resources(slurm_log_text: str) -> dict[str, str]:
    """The ``resources:`` Snakemake printed at the top of a job's SLURM log (name -> value)."""
    found = RESOURCES.search(slurm_log_text)
    if found is None:
        return {}
    pairs = (item.split("=", 1) for item in found.group(1).split(", ") if "=" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def cause(state: str, slurm_log_text: str) -> str:
    """``time``, ``memory``, ``cancelled``, ``node`` or ``other``: why SLURM ended the job."""
    if state == "TIMEOUT" or TIME_LIMIT.search(slurm_log_text):
        return "time"
    if state == "OUT_OF_MEMORY" or MEMORY.search(slurm_log_text):
        return "memory"
    if state == "NODE_FAIL":
        return "node"
    if state.startswith("CANCELLED") or CANCELLED.search(slurm_log_text):
        return "cancelled"
    return "other"


def profile_in_use(argv: Sequence[str]) -> str:
    """The ``--workflow-profile`` of this run's command line (profiles/slurm if none is named)."""
    for arg, following in zip(argv, [*argv[1:], ""], strict=True):
        if arg.startswith("--workflow-profile="):
            return arg.split("=", 1)[1]
        if arg == "--workflow-profile" and following:
            return following
    return DEFAULT_PROFILE


def job_line(job: FailedJob, slurm_log_text: str, profile: str) -> str:
    """The console line of one failed SLURM job."""
    where = f"rule {job.rule}"
    if job.slurm_log:
        # .../slurm_logs/rule_<rule>/<wildcards>/<id>.log: the wildcards tell shards apart
        parts = Path(job.slurm_log).parts
        if len(parts) >= 3 and parts[-3] == f"rule_{job.rule}":
            where += f" ({parts[-2]})"
    resources = {**job_resources(slurm_log_text), **job.resources}
    log = f" (SLURM log {job.slurm_log})" if job.slurm_log else ""
    settings = f"{profile.rstrip('/')}/profile.yaml"
    kind = cause(job.state, slurm_log_text)
    if kind == "time":
        limit = resources.get("runtime", "?")
        return (
            f"factprobe: {where} hit its SLURM time limit (runtime={limit} min, SLURM job {job.job_id}): "
            f"raise set-resources {job.rule}: runtime in {settings} and rerun{log}"
        )
    if kind == "memory":
        limit = resources.get("mem_mb", "?")
        return (
            f"factprobe: {where} went over its SLURM memory limit (mem_mb={limit}, SLURM job {job.job_id}): "
            f"raise set-resources {job.rule}: mem_mb in {settings} and rerun{log}"
        )
    if kind == "cancelled":
        return (
            f"factprobe: {where} was cancelled in SLURM (scancel, an administrator or preemption; "
            f"SLURM job {job.job_id}): its output was removed; rerun the same command to resubmit it{log}"
        )
    if kind == "node":
        return (
            f"factprobe: {where} lost its node (NODE_FAIL, SLURM job {job.job_id}): rerun the same "
            f"command; consider `slurm-requeue: true` in {settings}{log}"
        )
    own = OWN_LINE.findall(slurm_log_text)
    if own:  # the job's own one-line cause (factprobe.plumbing.rulelog), printed in the SLURM log
        return own[-1]
    return f"factprobe: {where} failed in SLURM (state {job.state}, SLURM job {job.job_id}): see{log or ' its log'}"


def explain(
    snakemake_log: str | Path | Sequence[str | Path], argv: Sequence[str], root: str | Path = "."
) -> list[str]:
    """One line per failed SLURM job of the run whose Snakemake log is ``snakemake_log`` (a path,
    or the list of them Snakemake hands to ``onerror``); ``root`` is the directory the logs'
    relative paths start from."""
    paths = [snakemake_log] if isinstance(snakemake_log, (str, Path)) else list(snakemake_log)
    text = ""
    for path in paths:
        try:
            text += Path(path).read_text(errors="replace")
        except OSError:
            continue
    profile = profile_in_use(argv)
    lines = []
    for job in failed_jobs(text):
        slurm_text = ""
        if job.slurm_log:
            path = Path(job.slurm_log)
            try:
                slurm_text = (path if path.is_absolute() else Path(root) / path).read_text(errors="replace")
            except OSError:
                slurm_text = ""
        lines.append(job_line(job, slurm_text, profile))
    # a submission sbatch refused (more than any node offers), sized only when it was submitted
    return lines + refused_submissions(text, f"{profile.rstrip('/')}/profile.yaml")
