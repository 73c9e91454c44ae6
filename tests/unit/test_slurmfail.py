"""One line per failed SLURM job, from the Snakemake and SLURM logs (factprobe.plumbing.slurmfail).

The texts are as Snakemake 9 / the SLURM executor plugin 2.8 and slurmstepd 22.05 write them
(tests/test_slurm_cluster.py makes them for real on a one-node cluster).
"""

from __future__ import annotations

from factprobe.plumbing.slurmfail import FailedJob, cause, explain, failed_jobs, job_resources, profile_in_use

SLURM_LOG = ".snakemake/slurm_logs/rule_score_shard/knowledge_control_0/31.log"
SNAKEMAKE_LOG = f"""\
[Sun Nov 29 03:12:40 2026]
rule score_shard:
    input: results/probes/knowledge/prompts.parquet
    output: results/scores/knowledge/shards/control/0.parquet, results/scores/knowledge/shards/control/0.topk.parquet
    log: logs/score_shard/knowledge/control/0.log
    jobid: 6
    reason: Missing output files: results/scores/knowledge/shards/control/0.parquet
    wildcards: suite=knowledge, model=control, shard=0
    resources: tmpdir=<TBD>, mem_mb=2000, mem=2 GB, mem_mib=1908, disk_mb=1000, slurm_partition=gpu, runtime=1, gpu=1, cpus_per_gpu=1
Shell command: None
Job 6 has been submitted with SLURM jobid 31 (log: /w/.test/{SLURM_LOG}).
[Sun Nov 29 03:14:10 2026]
Error in rule score_shard:
    message: SLURM-job '31' failed, SLURM status is: 'TIMEOUT'. Detailed failure reason unavailable (status command is not 'sacct').For further error details see the cluster/cloud log and the log files of the involved rule(s).
    jobid: 6
    input: results/probes/knowledge/prompts.parquet
    output: results/scores/knowledge/shards/control/0.parquet, results/scores/knowledge/shards/control/0.topk.parquet
    log: logs/score_shard/knowledge/control/0.log, /w/.test/{SLURM_LOG} (check log file(s) for error details)
    external_jobid: 31
Error in rule extract_dump:
    message: None
    jobid: 2
Shutting down, this might take some time.
"""
JOB_HEAD = """\
rule score_shard:
    wildcards: suite=knowledge, model=control, shard=0
    resources: tmpdir=<TBD>, mem_mb=2000, mem=2 GB, mem_mib=1908, disk_mb=1000, slurm_partition=gpu, runtime=1, gpu=1, cpus_per_gpu=1
Shell command: None
"""
TIME_LIMIT = "slurmstepd-vm: error: *** JOB 31 ON vm CANCELLED AT 2026-11-29T03:14:02 DUE TO TIME LIMIT ***\n"
MEMORY = (
    "slurmstepd-vm: error: StepId=2.batch exceeded memory limit (329781248 > 52428800), being killed\n"
    "slurmstepd-vm: error: Exceeded job memory limit\n"
    "slurmstepd-vm: error: *** JOB 2 ON vm CANCELLED AT 2026-11-29T02:57:41 ***\n"
)
CGROUP_OOM = "slurmstepd: error: Detected 1 oom_kill event in StepId=7.batch. Some of the step tasks have been OOM Killed.\n"
SCANCEL = "slurmstepd-vm: error: *** JOB 31 ON vm CANCELLED AT 2026-11-29T03:20:11 ***\n"


def test_failed_jobs_are_read_from_the_error_blocks():
    [job] = failed_jobs(SNAKEMAKE_LOG)
    assert job == FailedJob("score_shard", "31", "TIMEOUT", f"/w/.test/{SLURM_LOG}", job.resources)
    # the values it was submitted with, from its block at submission (same Snakemake jobid)
    assert job.resources["runtime"] == "1" and job.resources["slurm_partition"] == "gpu"


def test_a_retried_job_is_named_once_by_its_last_attempt():
    retried = SNAKEMAKE_LOG.replace("'31'", "'30'").replace("/31.log", "/30.log") + SNAKEMAKE_LOG
    [job] = failed_jobs(retried)
    assert job.job_id == "31"


def test_the_resources_snakemake_printed_for_the_job():
    resources = job_resources(JOB_HEAD)
    assert resources["runtime"] == "1" and resources["mem_mb"] == "2000"
    assert job_resources("no header") == {}


def test_the_cause_comes_from_the_state_or_slurmstepd_s_lines():
    assert cause("TIMEOUT", "") == "time"
    assert cause("CANCELLED", TIME_LIMIT) == "time"
    assert cause("FAILED", MEMORY) == "memory"  # jobacct_gather's kill: state FAILED
    assert cause("OUT_OF_MEMORY", "") == "memory"
    assert cause("FAILED", CGROUP_OOM) == "memory"
    assert cause("CANCELLED", SCANCEL) == "cancelled"
    assert cause("NODE_FAIL", "") == "node"
    assert cause("FAILED", "Traceback ...") == "other"


def test_the_profile_of_the_command_line():
    assert profile_in_use(["snakemake", "--workflow-profile", "profiles/mysite"]) == "profiles/mysite"
    assert profile_in_use(["snakemake", "--workflow-profile=site/"]) == "site/"
    assert profile_in_use(["snakemake"]) == "profiles/slurm"


def explained(tmp_path, slurm_text: str, state: str = "TIMEOUT") -> list[str]:
    log = tmp_path / "run.log"
    log.write_text(SNAKEMAKE_LOG.replace("/w/.test/", "").replace("'TIMEOUT'", f"'{state}'"))
    (tmp_path / SLURM_LOG).parent.mkdir(parents=True)
    (tmp_path / SLURM_LOG).write_text(JOB_HEAD + slurm_text)
    return explain([str(log)], ["snakemake", "--workflow-profile", "profiles/mysite"], root=tmp_path)


def test_a_job_killed_before_its_log_has_a_header_still_gets_its_limit(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(SNAKEMAKE_LOG)
    [line] = explain(log, ["snakemake"], root=tmp_path)  # its SLURM log is missing here
    assert "hit its SLURM time limit (runtime=1 min, SLURM job 31)" in line
    assert "runtime in profiles/slurm/profile.yaml" in line


def test_a_time_limit_names_rule_limit_and_key(tmp_path):
    assert explained(tmp_path, TIME_LIMIT) == [
        "factprobe: rule score_shard (knowledge_control_0) hit its SLURM time limit (runtime=1 min, "
        "SLURM job 31): raise set-resources score_shard: runtime in profiles/mysite/profile.yaml and "
        f"rerun (SLURM log {SLURM_LOG})"
    ]


def test_a_memory_kill_names_mem_mb(tmp_path):
    [line] = explained(tmp_path, MEMORY, state="FAILED")
    assert "went over its SLURM memory limit (mem_mb=2000, SLURM job 31)" in line
    assert "raise set-resources score_shard: mem_mb in profiles/mysite/profile.yaml and rerun" in line


def test_a_cancelled_job_says_rerun(tmp_path):
    [line] = explained(tmp_path, SCANCEL, state="CANCELLED")
    assert "was cancelled in SLURM (scancel, an administrator or preemption; SLURM job 31)" in line
    assert "rerun the same command to resubmit it" in line


def test_another_failure_shows_the_job_s_own_line(tmp_path):
    own = "factprobe: score_shard (suite=knowledge) failed: PrepareError: bad model (traceback in x.log)"
    assert explained(tmp_path, f"Traceback\n{own}\n", state="FAILED") == [own]


def test_no_lines_for_a_local_run_or_a_missing_log(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("Error in rule extract_dump:\n    message: None\n")
    assert explain(log, ["snakemake"]) == []
    assert explain(tmp_path / "absent.log", ["snakemake"]) == []
