"""A SLURM request that no node of its partition can hold, named once and not retried.

``sbatch`` refuses a job that asks for more GPUs, CPUs or memory than any node of its partition
offers (``Requested node configuration is not available``). The SLURM executor plugin reports
the refusal as a failed job (``SLURM sbatch failed. The error message was ...`` and the whole
sbatch call), and Snakemake restarts it as often as the profile's ``retries`` say: the same
request, refused again. Snakemake restarts every failed job alike (no per-cause rule), so the
request is put to SLURM before anything is submitted: the Snakefile's ``onstart`` hands the
planned jobs to :func:`refuse_unsatisfiable`, which runs ``sbatch --test-only`` once per distinct
request of a rule (the controller's own check of the request against its nodes; no job is
queued) and stops the run with one line per refused rule::

    factprobe: rule score_shard asks SLURM for gpu=4, cpus_per_gpu=1 (4 CPUs), mem_mb=2000 on
    partition gpu, which none of its nodes offers (largest node: 2 GPUs, 2 CPUs, 8000 MB; sbatch:
    Requested node configuration is not available): lower set-resources score_shard: gpu in
    profiles/mysite/profile.yaml (or set its slurm_partition to one with larger nodes) and rerun

A request whose size is known only when its inputs exist (``<TBD>`` before) is refused at
submission; :func:`factprobe.plumbing.slurmfail.explain` then names it the same way from the sbatch call
in the run's log (after the profile's retry).

Standard library only: the Snakefile imports it while parsing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

#: sbatch's answers to a request larger than every node of the partition (``allocation failure:``
#: with ``--test-only``, ``Batch job submission failed:`` without).
UNSATISFIABLE = re.compile(
    r"Requested node configuration is not available"
    r"|Memory required by task is not available"
    r"|More processors requested than permitted"
    r"|Invalid generic resource \(gres\) specification"
)
#: ``gpu:2``, ``gpu:a100:4(S:0-1)``, ``gpu:a100:2,gpu:v100:1`` in sinfo's ``%G``.
GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)")
SINFO_FORMAT = "%N|%c|%m|%G"
Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class Node:
    """One node of a partition as ``sinfo`` reports it."""

    name: str
    cpus: int
    mem_mb: int
    gpus: int


@dataclass(frozen=True)
class Request:
    """What one sbatch call asks for, in the profile's resource names."""

    partition: str | None
    gpus: int = 0
    cpus_per_gpu: int | None = None
    cpus_per_task: int | None = None
    mem_mb: int | None = None
    mem_mb_per_cpu: int | None = None

    @property
    def cpus(self) -> int:
        """CPUs of the job on its node (``--cpus-per-gpu`` counts per GPU)."""
        if self.cpus_per_gpu is not None:
            return self.cpus_per_gpu * max(self.gpus, 1)
        return self.cpus_per_task or 1

    @property
    def memory_mb(self) -> int | None:
        if self.mem_mb is not None:
            return self.mem_mb
        return self.mem_mb_per_cpu * self.cpus if self.mem_mb_per_cpu is not None else None

    def asked(self) -> dict[str, int]:
        """Profile key -> value of every size the request sets."""
        keys = {
            "gpu": self.gpus or None,
            "cpus_per_gpu": self.cpus_per_gpu,
            "cpus_per_task": self.cpus_per_task,
            "mem_mb": self.mem_mb,
            "mem_mb_per_cpu": self.mem_mb_per_cpu,
        }
        return {key: value for key, value in keys.items() if value is not None}


def _option(args: Sequence[str], *names: str) -> str | None:
    """The value of ``--name=value``, ``--name value`` or ``-n value`` (the last one given)."""
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg.startswith(name + "="):
                found = arg.split("=", 1)[1]
            elif arg == name and i + 1 < len(args):
                found = args[i + 1]
    return found


def _int(value: str | None) -> int | None:
    digits = re.match(r"\d+", value or "")
    return int(digits.group()) if digits else None


def sbatch_args(call: str) -> list[str]:
    """The options of an sbatch command line (the wrapped job command left out)."""
    head = re.split(r"\s--wrap[= ]", call, maxsplit=1)[0]
    try:
        return shlex.split(head)
    except ValueError:  # an unbalanced quote: the sizes are still plain words
        return head.split()


def request_of(args: Sequence[str]) -> Request:
    """The sizes an sbatch call asks for (the plugin's ``-p``, ``--gpus``/``--gres``,
    ``--cpus-per-gpu``/``--cpus-per-task``, ``--mem``/``--mem-per-cpu``)."""
    gpus = _int(_option(args, "--gpus", "-G"))
    if gpus is None:
        gres = GRES_GPU.search(_option(args, "--gres") or "")
        gpus = int(gres.group(1)) if gres else 0
    return Request(
        partition=_option(args, "-p", "--partition"),
        gpus=gpus,
        cpus_per_gpu=_int(_option(args, "--cpus-per-gpu")),
        cpus_per_task=_int(_option(args, "--cpus-per-task", "-c")),
        mem_mb=_int(_option(args, "--mem")),
        mem_mb_per_cpu=_int(_option(args, "--mem-per-cpu")),
    )


def parse_sinfo(text: str) -> list[Node]:
    """Nodes from ``sinfo -h -N -o '%N|%c|%m|%G'`` (a node in two partitions once)."""
    nodes = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or _int(parts[1]) is None or _int(parts[2]) is None:
            continue
        gpus = sum(int(n) for n in GRES_GPU.findall(parts[3]))
        nodes[parts[0]] = Node(parts[0], _int(parts[1]), _int(parts[2]), gpus)
    return list(nodes.values())


def partition_nodes(partition: str | None, run: Runner = subprocess.run) -> list[Node] | None:
    """The nodes of ``partition`` (the default partition if None); None when sinfo cannot say."""
    cmd = ["sinfo", "-h", "-N", "-o", SINFO_FORMAT] + (["-p", partition] if partition else [])
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    nodes = parse_sinfo(proc.stdout) if proc.returncode == 0 else []
    return nodes or None


def over_keys(request: Request, nodes: Sequence[Node] | None) -> list[str]:
    """The profile keys whose value no node reaches; all the request's keys when none stands
    out alone (only their combination fits no node) or the nodes are unknown."""
    asked = request.asked()
    if not nodes:
        return list(asked)
    keys = []
    most_gpus = max(n.gpus for n in nodes)
    if request.gpus > most_gpus:
        keys.append("gpu")
    # CPUs per GPU are over only if they are at the most GPUs a node has
    cpus = request.cpus
    if request.cpus_per_gpu is not None and request.gpus > most_gpus:
        cpus = request.cpus_per_gpu * max(most_gpus, 1)
    if cpus > max(n.cpus for n in nodes):
        keys += [k for k in ("cpus_per_gpu", "cpus_per_task") if k in asked]
    memory = request.memory_mb
    if memory is not None and memory > max(n.mem_mb for n in nodes):
        keys += [k for k in ("mem_mb", "mem_mb_per_cpu") if k in asked]
    return keys or list(asked)


def _offer(nodes: Sequence[Node] | None) -> str:
    if not nodes:
        return "what its nodes offer could not be read with sinfo"
    largest = (max(n.gpus for n in nodes), max(n.cpus for n in nodes), max(n.mem_mb for n in nodes))
    count = f"{len(nodes)} node{'s' if len(nodes) > 1 else ''}"
    return f"{count}, largest: {largest[0]} GPUs, {largest[1]} CPUs, {largest[2]} MB"


def refusal_line(
    rule: str, detail: str, request: Request, nodes: Sequence[Node] | None, answer: str, settings: str
) -> str:
    """The console line of a request sbatch refused as larger than the partition's nodes.

    ``detail``: `` (wildcards)`` or `` (N jobs)`` after the rule, or empty; ``answer``: sbatch's
    message; ``settings``: the profile.yaml the run used."""
    sizes = []
    for key, value in request.asked().items():
        total = f" ({request.cpus} CPUs)" if key == "cpus_per_gpu" and request.gpus > 1 else ""
        sizes.append(f"{key}={value}{total}")
    partition = f"partition {request.partition}" if request.partition else "the default partition"
    # --cpus-per-task is the rule's threads unless the profile sets cpus_per_task
    names = {"cpus_per_task": f"cpus_per_task (or set-threads {rule})"}
    change = ", ".join(names.get(k, k) for k in over_keys(request, nodes))
    reason = UNSATISFIABLE.search(answer)
    said = reason.group(0) if reason else answer.strip()
    return (
        f"factprobe: rule {rule}{detail} asks SLURM for {', '.join(sizes) or 'its defaults'} on "
        f"{partition}, which none of its nodes offers ({_offer(nodes)}; sbatch: {said}): lower "
        f"set-resources {rule}: {change} in {settings} (or set its slurm_partition to one with "
        "larger nodes) and rerun"
    )


#: The plugin's report of a refused submission, in the Snakemake log: sbatch's message, the call.
SBATCH_REFUSED = re.compile(
    r"SLURM sbatch failed\. The error message was '(.*?)'\.\n\s*sbatch call:\n\s*(sbatch [^\n]*)", re.S
)
#: The plugin's ``--comment rule_<rule>_wildcards_<wildcards>``.
COMMENT = re.compile(r"^rule_(\w+?)(?:_wildcards_(\S+))?$")


def refused_submissions(snakemake_log: str, settings: str, run: Runner = subprocess.run) -> list[str]:
    """One line per job whose submission sbatch refused as larger than every node (a request
    sized only at submission), from the run's Snakemake log; a job retried (the profile's
    ``retries``) once."""
    lines: dict[tuple[str, str], str] = {}
    for found in SBATCH_REFUSED.finditer(snakemake_log):
        answer, call = found.groups()
        if not UNSATISFIABLE.search(answer):
            continue
        args = sbatch_args(call)
        named = COMMENT.match(_option(args, "--comment") or "")
        if named is None:
            continue
        rule, wildcards = named.group(1), named.group(2) or ""
        request = request_of(args)
        nodes = partition_nodes(request.partition, run)
        detail = f" ({wildcards})" if wildcards else ""
        lines[(rule, wildcards)] = refusal_line(rule, detail, request, nodes, answer, settings)
    return list(lines.values())


def test_only(args: Sequence[str], run: Runner = subprocess.run) -> str | None:
    """sbatch's refusal of ``args`` (an sbatch call without its job) as larger than every node,
    asked with ``--test-only`` (nothing is queued); None if SLURM would take it or cannot say."""
    cmd = [*args, "--test-only", "--wrap=true"]
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    answer = proc.stdout + proc.stderr
    return answer if proc.returncode != 0 and UNSATISFIABLE.search(answer) else None


def refusals(
    planned: Iterable[tuple[str, list[str]]], settings: str, run: Runner = subprocess.run
) -> list[str]:
    """One line per rule whose request SLURM refuses; ``planned``: (rule, sbatch call without
    its job) per planned job. Each distinct request is asked once."""
    asked: dict[tuple[str, tuple[str, ...]], int] = {}
    for rule, args in planned:
        key = (rule, tuple(args))
        asked[key] = asked.get(key, 0) + 1
    lines: dict[str, str] = {}
    for (rule, args), count in asked.items():
        if rule in lines:
            continue
        answer = test_only(args, run)
        if answer is None:
            continue
        request = request_of(args)
        detail = f" ({count} jobs)" if count > 1 else ""
        nodes = partition_nodes(request.partition, run)
        lines[rule] = refusal_line(rule, detail, request, nodes, answer, settings)
    return list(lines.values())


def planned_sbatch(workflow) -> list[tuple[str, list[str]]]:
    """(rule, the sbatch options the SLURM executor plugin will submit it with) per planned
    cluster job of a SLURM run (none otherwise); a job whose sizes wait for its inputs
    (``<TBD>``) is left to the submission."""
    plugin = getattr(workflow, "executor_plugin", None)
    if plugin is None or plugin.name != "slurm":
        return []
    try:  # the plugin's own command builder: the options are the ones it submits
        from snakemake_executor_plugin_slurm.submit_string import get_submit_command
        from snakemake_executor_plugin_slurm.utils import set_gres_string
    except ImportError:
        return []
    planned = []
    for job in workflow.dag.needrun_jobs():
        if job.is_local or job.is_group():
            continue
        try:
            resources = job.resources
            if any(str(value) == "<TBD>" for key, value in resources.items() if key != "tmpdir"):
                continue
            partition = resources.get("slurm_partition")
            account = resources.get("slurm_account")
            params = {
                "run_uuid": "factprobe-test-only",
                "slurm_logfile": "/dev/null",
                "comment_str": f"rule_{job.rule.name}",
                "account": f"-A {shlex.quote(str(account))}" if account else "",
                "partition": f"-p {shlex.quote(str(partition))}" if partition else "",
                "workdir": None,
            }
            call = get_submit_command(job, params, settings=workflow.executor_settings)
            call += set_gres_string(job)
        except Exception:  # noqa: BLE001 - a job the check cannot size is sized at submission
            continue
        planned.append((job.rule.name, sbatch_args(call)))
    return planned


def refuse_unsatisfiable(workflow, argv: Sequence[str]) -> None:
    """``onstart``: stop a SLURM run before its first submission when SLURM refuses a planned
    request as larger than every node of its partition (one line per rule)."""
    from factprobe.plumbing.slurmfail import profile_in_use

    settings = f"{profile_in_use(argv).rstrip('/')}/profile.yaml"
    lines = refusals(planned_sbatch(workflow), settings)
    if lines:
        print("\n".join(lines), file=sys.stderr)
        raise SystemExit(1)
