"""A request larger than every node of its partition: one line naming the key (factprobe.plumbing.slurmfit).

The sbatch and sinfo texts are as slurm-wlm 22.05 and the SLURM executor plugin 2.8 write them
(tests/test_slurm_cluster.py makes them for real on the one-node cluster); ``sbatch`` and
``sinfo`` are answered here by a stand-in runner that records what it was asked.
"""

from __future__ import annotations

import subprocess

from factprobe.plumbing.slurmfit import (
    Node,
    Request,
    over_keys,
    parse_sinfo,
    refusal_line,
    refusals,
    refused_submissions,
    request_of,
    sbatch_args,
)

#: The plugin's sbatch call for score_shard with gpu=4 (its --wrap command shortened).
CALL = (
    "sbatch --parsable --job-name f4b6 --output /w/.snakemake/slurm_logs/rule_score_shard/knowledge_control_0/%j.log "
    "--export=ALL --comment rule_score_shard_wildcards_knowledge_control_0   -p gpu -t 240 --mem 2000 "
    "--cpus-per-gpu=1 -D /w --gpus=4 --wrap=\"/v/bin/python -m snakemake --snakefile '/w/workflow/Snakefile' "
    "--target-jobs 'score_shard:suite=knowledge,model=control,shard=0' --attempt 1\""
)
REFUSED = "sbatch: error: Batch job submission failed: Requested node configuration is not available"
#: Two attempts (the profile's `retries: 1`) of the same refused submission, as Snakemake logs them.
LOG = "".join(
    f"""\
Error in rule score_shard:
    message: SLURM sbatch failed. The error message was '{REFUSED}'.
    sbatch call:
        {CALL}
For further error details see the cluster/cloud log and the log files of the involved rule(s).
    jobid: 0
Trying to restart job 0.
"""
    for _ in range(2)
)
ONE_NODE = "vm|2|8000|gpu:2\n"
PROFILE = "profiles/mysite/profile.yaml"


class Cluster:
    """Stands in for ``subprocess.run`` of sinfo and ``sbatch --test-only``: sbatch refuses a
    request with more than 2 GPUs, as the one-node cluster does."""

    def __init__(self, sinfo: str = ONE_NODE):
        self.sinfo = sinfo
        self.calls: list[list[str]] = []

    def __call__(self, cmd, **_) -> subprocess.CompletedProcess:
        self.calls.append(list(cmd))
        if cmd[0] == "sinfo":
            return subprocess.CompletedProcess(cmd, 0, self.sinfo, "")
        gpus = request_of(cmd).gpus
        if gpus > 2:
            return subprocess.CompletedProcess(
                cmd, 1, "", "allocation failure: Requested node configuration is not available\n"
            )
        return subprocess.CompletedProcess(cmd, 0, "", "sbatch: Job 5 to start at 2026-12-07T23:40:29\n")


def test_the_request_is_read_from_the_plugins_sbatch_call():
    args = sbatch_args(CALL)
    assert args[-1] == "--gpus=4"  # the wrapped job command is left out
    assert request_of(args) == Request(partition="gpu", gpus=4, cpus_per_gpu=1, mem_mb=2000)
    gres = request_of(
        ["sbatch", "-p", "gpu", "--gres=gpu:a100:3", "--cpus-per-task=16", "--mem-per-cpu", "500"]
    )
    assert gres == Request(partition="gpu", gpus=3, cpus_per_task=16, mem_mb_per_cpu=500)
    assert gres.cpus == 16 and gres.memory_mb == 8000


def test_sinfo_nodes_with_their_gpus():
    text = "a1|64|512000|gpu:a100:4(S:0-1)\nv1|32|192000|gpu:v100:2,gpu:t4:1\nc1|128|1024000|(null)\nc1|128|1024000|(null)\n"
    assert parse_sinfo(text) == [
        Node("a1", 64, 512000, 4),
        Node("v1", 32, 192000, 3),
        Node("c1", 128, 1024000, 0),  # in two partitions: once
    ]


def test_the_key_named_is_the_one_no_node_reaches():
    nodes = parse_sinfo(ONE_NODE)
    # 4 GPUs x 1 CPU are 4 CPUs, but at the 2 GPUs a node has they are 2: only gpu is over
    assert over_keys(Request("gpu", gpus=4, cpus_per_gpu=1, mem_mb=2000), nodes) == ["gpu"]
    assert over_keys(Request("gpu", gpus=1, cpus_per_gpu=8, mem_mb=2000), nodes) == ["cpus_per_gpu"]
    assert over_keys(Request("cpu", cpus_per_task=1, mem_mb=64000), nodes) == ["mem_mb"]
    assert over_keys(Request("cpu", cpus_per_task=2, mem_mb_per_cpu=5000), nodes) == ["mem_mb_per_cpu"]
    # GPUs on one node, CPUs on another: only the combination fits none, so every key is named
    two = [Node("g", 4, 8000, 2), Node("c", 64, 8000, 0)]
    assert over_keys(Request("p", gpus=2, cpus_per_gpu=8), two) == ["gpu", "cpus_per_gpu"]
    assert over_keys(Request("p", gpus=4, mem_mb=1), None) == ["gpu", "mem_mb"]


def test_the_line_names_rule_request_offer_and_key():
    request = Request("gpu", gpus=4, cpus_per_gpu=1, mem_mb=2000)
    line = refusal_line("score_shard", "", request, parse_sinfo(ONE_NODE), REFUSED, PROFILE)
    assert line == (
        "factprobe: rule score_shard asks SLURM for gpu=4, cpus_per_gpu=1 (4 CPUs), mem_mb=2000 on "
        "partition gpu, which none of its nodes offers (1 node, largest: 2 GPUs, 2 CPUs, 8000 MB; "
        "sbatch: Requested node configuration is not available): lower set-resources score_shard: gpu "
        "in profiles/mysite/profile.yaml (or set its slurm_partition to one with larger nodes) and rerun"
    )
    cpu = refusal_line("build_probes", "", Request("cpu", cpus_per_task=16), None, REFUSED, PROFILE)
    assert "(what its nodes offer could not be read with sinfo;" in cpu
    assert "set-resources build_probes: cpus_per_task (or set-threads build_probes) in" in cpu


def test_each_distinct_request_is_put_to_sbatch_once_and_refused_rules_named_once():
    cluster = Cluster()
    shard = sbatch_args(CALL)
    fits = ["sbatch", "-p", "cpu", "--mem", "1000", "--ntasks=1", "--cpus-per-task=1"]
    planned = [("score_shard", shard)] * 3 + [("score_suite", fits)] * 2
    [line] = refusals(planned, PROFILE, run=cluster)
    assert line.startswith("factprobe: rule score_shard (3 jobs) asks SLURM for gpu=4, ")
    tests = [c for c in cluster.calls if c[0] == "sbatch"]
    assert [c[-2:] for c in tests] == [["--test-only", "--wrap=true"]] * 2
    assert ["sinfo", "-h", "-N", "-o", "%N|%c|%m|%G", "-p", "gpu"] in cluster.calls
    assert refusals([("score_suite", fits)], PROFILE, run=cluster) == []


def test_a_refused_submission_in_the_log_is_named_once_with_its_wildcards():
    [line] = refused_submissions(LOG, PROFILE, run=Cluster())
    assert line.startswith(
        "factprobe: rule score_shard (knowledge_control_0) asks SLURM for gpu=4, cpus_per_gpu=1 (4 CPUs)"
    )
    assert line.endswith(
        f"set-resources score_shard: gpu in {PROFILE} (or set its slurm_partition to one with larger nodes) and rerun"
    )
    # any other refusal (an account, a partition name) is the plugin's to report
    other = LOG.replace(
        "Requested node configuration is not available", "Invalid account or account/partition"
    )
    assert refused_submissions(other, PROFILE, run=Cluster()) == []
