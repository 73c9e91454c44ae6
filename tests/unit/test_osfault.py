"""A job that hits a limit of the system says so in one line naming the path (factprobe.plumbing.osfault).

Each fault is real: a child process writes an output with the library's atomic writer under a
file-size limit (``ulimit -f``), into a folder it may not write (as root: without the capability to override permissions), or into a full
tmpfs standing for /tmp. The child prints what the job's console would show.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from factprobe.plumbing.osfault import fault_line, is_os_fault, naming

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow" / "scripts"

#: The child: writes a 4 MB table of random floats (zstd cannot shrink it) atomically to argv[1] and prints the fault line it gets.
WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pyarrow as pa
    from factprobe.io import write_table
    from factprobe.plumbing.osfault import fault_line, is_os_fault
    try:
        write_table(pa.table({"x": np.random.default_rng(0).random(500_000)}), sys.argv[1])
    except OSError as err:
        assert is_os_fault(err), repr(err)
        print(fault_line("rule extract_dump (dump=1)", err, "logs/x.log"))
        sys.exit(1)
    """
)


def write_in_child(target: Path, prefix: list[str] = (), env: dict | None = None, limit: int | None = None):
    def limit_file_size():
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [*prefix, sys.executable, "-c", WRITER, str(target)],
        env={**os.environ, "PYTHONPATH": str(SCRIPTS), **(env or {})},
        preexec_fn=limit_file_size if limit else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


def no_partial(folder: Path) -> bool:
    return not any(folder.iterdir())


def test_a_file_size_limit_names_the_output_and_ulimit(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = write_in_child(out / "claims.parquet", limit=100_000)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip() == (
        f"factprobe: rule extract_dump (dump=1) failed: File too large: {out / 'claims.parquet'}: the "
        "file-size limit of the job (ulimit -f: 100000 bytes) is below what this output needs: run "
        "with `ulimit -f unlimited` (or a larger file-size limit of your batch system) and rerun "
        "(traceback in logs/x.log)"
    )
    assert no_partial(out)  # neither the output nor its temporary sibling


def test_a_permission_error_names_the_folder_and_the_user(tmp_path):
    import getpass

    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o555)
    prefix = []
    if os.geteuid() == 0:  # root writes anywhere: the child runs without that capability
        if shutil.which("setpriv") is None:
            pytest.skip("as root this test needs setpriv (util-linux): the permission test did not run")
        caps = "-dac_override,-dac_read_search"
        prefix = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]
    proc = write_in_child(out / "claims.parquet", prefix=prefix)
    assert proc.returncode == 1, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith(f"factprobe: rule extract_dump (dump=1) failed: Permission denied: {out}/"), line
    assert f"user {getpass.getuser()} may not write or read there: give it access to {out}" in line
    assert "(or run in another --directory) and rerun (traceback in logs/x.log)" in line
    assert no_partial(out)


@pytest.fixture
def full_tmp(tmp_path):
    """A 1 MB tmpfs standing for a small /tmp (root only: it is mounted)."""
    mount = tmp_path / "tmp"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root: the full-/tmp test did not run")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({proc.stderr.decode().strip()}): the full-/tmp test did not run"
        )
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_tmp_names_the_path_and_tmpdir(full_tmp):
    target = full_tmp / "job" / "labels.parquet"
    proc = write_in_child(target, env={"TMPDIR": str(full_tmp)})
    assert proc.returncode == 1, proc.stderr
    line = proc.stdout.strip()
    assert line.startswith(
        f"factprobe: rule extract_dump (dump=1) failed: No space left on device: {target}: "
    )
    assert f"the filesystem of {target} is full (" in line
    assert "point TMPDIR at a larger disk (Snakemake: --default-resources tmpdir=<folder>)" in line
    assert no_partial(target.parent)


def test_naming_fills_a_missing_file_name_only():
    with pytest.raises(OSError) as caught, naming("out.parquet"):
        raise OSError(errno.EFBIG, "Error writing bytes to file")
    assert caught.value.filename == "out.parquet"
    with pytest.raises(OSError) as caught, naming("out.parquet"):
        raise OSError(errno.EACCES, "Permission denied", "other.parquet")
    assert caught.value.filename == "other.parquet"


def test_only_the_system_s_limits_are_faults():
    assert is_os_fault(OSError(errno.ENOSPC, "full"))
    assert not is_os_fault(OSError(errno.ENOENT, "missing"))  # a missing input is a bug upstream
    assert not is_os_fault(ValueError("x"))
    line = fault_line("rule r", OSError(errno.EROFS, "ro", "/srv/x.parquet"), "logs/r.log")
    assert line == (
        "factprobe: rule r failed: Read-only file system: /srv/x.parquet: /srv/x.parquet is on a "
        "read-only filesystem: run with a writable --directory and rerun (traceback in logs/r.log)"
    )
