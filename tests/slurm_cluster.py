"""A one-node SLURM cluster on this machine, for the cluster tests (``make test-slurm``).

    python tests/slurm_cluster.py start [--state DIR] [--install]   # prints: export SLURM_CONF=...
    python tests/slurm_cluster.py stop  [--state DIR]

``start`` (as root: the daemons run as root, and it may install packages) writes slurm.conf, gres.conf and cgroup.conf and a fresh MUNGE key into the state
folder (default ``$FACTPROBE_SLURM_STATE`` or /tmp/factprobe-slurm), starts ``munged``,
``slurmctld`` and ``slurmd`` from it, and waits until the node is idle. ``--install`` first
installs Debian's ``slurm-wlm`` and ``munge`` with apt when ``slurmctld`` is missing. Clients
find the cluster through /etc/slurm/slurm.conf, a link to the state folder's that ``start``
makes where the machine has none (Snakemake's job step drops ``SLURM_CONF`` from the environment
of the ``srun`` inside each job, so a real cluster's default path is the one that works); a
machine with its own slurm.conf is refused. ``stop`` cancels the cluster's jobs, ends the three
daemons by the process ids their pid files hold, and removes that link.

The node is the machine as it is (its cores, a memory size below what it has) plus two
placeholder GPUs (``gres.conf`` ``File=`` two links to /dev/null): GPU jobs are scheduled and get
``CUDA_VISIBLE_DEVICES`` like on a real GPU node, and run on the CPU. Without a cgroup
hierarchy (containers), memory is enforced by ``jobacct_gather/linux`` sampling each job's
resident memory every second and killing it over ``--mem`` (``OverMemoryKill``). There is no
accounting daemon, so ``sacct`` does not work: Snakemake polls with ``squeue``, which sees
finished jobs for ``MinJobAge`` seconds.
"""

from __future__ import annotations

import argparse
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_STATE = Path(os.environ.get("FACTPROBE_SLURM_STATE", "/tmp/factprobe-slurm"))
DAEMONS = ("slurmd", "slurmctld", "munged")  # stopped in this order
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
PACKAGES = ("slurm-wlm", "munge")
#: Memory the node offers jobs (MB): well below the machine's, shared with the test processes.
NODE_MEMORY_MB = 8000


class ClusterError(RuntimeError):
    """The cluster could not be installed or started; the message says what to look at."""


def installed() -> bool:
    """Whether slurm-wlm and munge are installed (their daemons on PATH)."""
    return all(shutil.which(tool, path=f"{os.environ.get('PATH', '')}:/usr/sbin") for tool in DAEMONS)


def install() -> None:
    """apt-get install slurm-wlm and munge (root, Debian/Ubuntu)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClusterError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-500:]}")


def slurm_conf(state: Path, host: str, cpus: int, memory_mb: int) -> str:
    """slurm.conf of the one-node cluster kept under ``state``."""
    return f"""\
# One-node test cluster written by tests/slurm_cluster.py.
ClusterName=factprobe
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={state}/munge/munge.socket
StateSaveLocation={state}/ctld
SlurmdSpoolDir={state}/spool
SlurmctldPidFile={state}/slurmctld.pid
SlurmdPidFile={state}/slurmd.pid
SlurmctldLogFile={state}/slurmctld.log
SlurmdLogFile={state}/slurmd.log
SlurmctldParameters=enable_configless
MpiDefault=none
# No cgroups in a container: processes tracked through /proc, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# No slurmdbd: no sacct; finished jobs stay in squeue for a day (Snakemake polls squeue).
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=86400
# Memory enforced by sampling (no cgroup): a job over --mem is killed (state OUT_OF_MEMORY).
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
# A timed-out job gets SIGTERM, then SIGKILL 5 s later (the default 30 s slows the tests).
KillWait=5
OverTimeLimit=0
InactiveLimit=0
SlurmdTimeout=300
SlurmctldTimeout=300
ReturnToService=2
SchedulerType=sched/backfill
GresTypes=gpu
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={host} MaxTime=INFINITE State=UP
"""


def gres_conf(state: Path) -> str:
    """gres.conf: two placeholder GPU devices (links to /dev/null), no detection."""
    return f"AutoDetect=off\nName=gpu File={state}/dev/gpu[0-1]\n"


def link_system_conf(state: Path) -> None:
    """/etc/slurm/slurm.conf -> the state folder's slurm.conf, unless the machine has its own."""
    ours = state / "slurm.conf"
    if SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)) == ours:
        return
    if SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink():
        raise ClusterError(
            f"{SYSTEM_CONF} exists: this machine has a SLURM configuration of its own, which the "
            "test cluster does not replace; run the cluster tests against that cluster instead"
        )
    SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SYSTEM_CONF.symlink_to(ours)


def read_pid(path: Path) -> int | None:
    """The pid a daemon's pid file holds, if the file exists and that process is alive."""
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid


def client_env(state: Path) -> dict[str, str]:
    return dict(os.environ, SLURM_CONF=str(state / "slurm.conf"))


def node_state(state: Path) -> str | None:
    """The node's state as ``sinfo`` says it (``idle``, ``mixed``, ...), None if no answer."""
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"],
            env=client_env(state),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.split()[0] if proc.returncode == 0 and proc.stdout.split() else None


def is_up(state: Path = DEFAULT_STATE) -> bool:
    """Whether a cluster from ``state`` answers and its node takes jobs."""
    if not (state / "slurm.conf").is_file():
        return False
    current = node_state(state)
    return current is not None and current.rstrip("*~#") in ("idle", "mixed", "allocated", "completing")


def _daemon(cmd: list[str], pid_file: Path, log: Path) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    deadline = time.monotonic() + 30
    while read_pid(pid_file) is None:
        if time.monotonic() > deadline or proc.returncode != 0:
            tail = log.read_text()[-1500:] if log.exists() else ""
            raise ClusterError(
                f"{cmd[0]} did not start (exit {proc.returncode}): {proc.stderr.strip()} {tail}"
            )
        time.sleep(0.2)


def start(state: Path = DEFAULT_STATE, wait_s: float = 60) -> Path:
    """Write the configuration under ``state`` and start munged, slurmctld and slurmd; returns
    the slurm.conf path once the node is idle. A cluster already up from ``state`` is kept."""
    if is_up(state):
        return state / "slurm.conf"
    stop(state)
    if not installed():
        raise ClusterError("slurm-wlm and munge are not installed: apt-get install slurm-wlm munge")
    if os.geteuid() != 0:
        raise ClusterError("the test cluster's daemons run as root (SlurmUser=root): start it as root")
    host = socket.gethostname().split(".")[0]
    for sub in ("munge", "ctld", "spool", "dev"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(state / "munge", 0o700)
    for gpu in (0, 1):
        # slurmd takes only character devices as GPU files: links to /dev/null.
        device = state / "dev" / f"gpu{gpu}"
        if not device.is_symlink():
            device.symlink_to("/dev/null")
    link_system_conf(state)
    cpus = os.cpu_count() or 1
    (state / "slurm.conf").write_text(slurm_conf(state, host, cpus, NODE_MEMORY_MB))
    (state / "gres.conf").write_text(gres_conf(state))
    (state / "cgroup.conf").write_text("# No cgroups here (ProctrackType=proctrack/linuxproc).\n")
    key = state / "munge" / "munge.key"
    if not key.exists():
        subprocess.run(["mungekey", "--create", "--keyfile", str(key)], check=True, capture_output=True)
    os.chmod(key, 0o600)
    munge = state / "munge"
    _daemon(
        ["munged", "--force", f"--key-file={key}", f"--socket={munge}/munge.socket"]
        + [f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"],
        munge / "munged.pid",
        munge / "munged.log",
    )
    conf = str(state / "slurm.conf")
    # -c: a fresh controller state (no jobs of an earlier cluster from this folder)
    _daemon(["slurmctld", "-c", "-f", conf], state / "slurmctld.pid", state / "slurmctld.log")
    _daemon(["slurmd", "-f", conf], state / "slurmd.pid", state / "slurmd.log")
    deadline = time.monotonic() + wait_s
    while not is_up(state):
        if time.monotonic() > deadline:
            log = (state / "slurmd.log").read_text()[-1500:] if (state / "slurmd.log").exists() else ""
            raise ClusterError(f"node not idle after {wait_s:.0f} s (sinfo: {node_state(state)}); {log}")
        time.sleep(0.5)
    return state / "slurm.conf"


def restart_controller(state: Path = DEFAULT_STATE) -> None:
    """Stop slurmctld by its pid and start it again from its saved state (jobs kept)."""
    pid_file = state / "slurmctld.pid"
    pid = read_pid(pid_file)
    if pid is not None:
        _end(pid)
    _daemon(["slurmctld", "-f", str(state / "slurm.conf")], pid_file, state / "slurmctld.log")


def _end(pid: int, wait_s: float = 20) -> None:
    """SIGTERM ``pid``, SIGKILL it if it is still there after ``wait_s``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(state: Path = DEFAULT_STATE) -> None:
    """Cancel the cluster's jobs and end its daemons (by their pid files)."""
    if read_pid(state / "slurmctld.pid") is not None:
        subprocess.run(
            ["scancel", "--full", "--quiet", "--user", getpass.getuser()], env=client_env(state), timeout=30
        )
        # Let the step daemons end their jobs before slurmd goes.
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            proc = subprocess.run(
                ["squeue", "-h", "-t", "running,completing", "-o", "%i"],
                env=client_env(state),
                capture_output=True,
                text=True,
                timeout=10,
            )
            if proc.returncode != 0 or not proc.stdout.strip():
                break
            time.sleep(0.5)
    for pid_file in (state / "slurmd.pid", state / "slurmctld.pid", state / "munge" / "munged.pid"):
        pid = read_pid(pid_file)
        if pid is not None:
            _end(pid)
    if SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)) == state / "slurm.conf":
        SYSTEM_CONF.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("--state", type=Path, default=DEFAULT_STATE, help="folder of its config and state")
    parser.add_argument("--install", action="store_true", help="apt-get install slurm-wlm munge if missing")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    try:
        if args.action == "stop":
            stop(state)
            return 0
        if args.install and not installed():
            install()
        conf = start(state)
    except (ClusterError, OSError, subprocess.SubprocessError) as err:
        print(f"slurm_cluster: {args.action} failed: {err}", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={conf}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
