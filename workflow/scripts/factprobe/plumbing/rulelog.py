"""One logging setup for every rule script (``workflow/scripts/*.py``).

``rule_logger(snakemake)`` sends the library's log records to the job's ``log:`` file, names the
rule, its wildcards and the library copy in use, and at exit writes one line per output with its
row count, so every log ends with what the job produced.

A job that fails with one of factprobe's own errors (a bad dump, a bad model, an empty
selection: any exception class defined in the ``factprobe`` package) prints its message once, as
one line on the console with the path of the log that holds the traceback; its traceback goes to
the log only. So does a limit of the system (a file-size limit, a permission, a full disk:
factprobe.plumbing.osfault), with the path and what to change. Any other exception is a bug: its
traceback is printed as Python does.
"""

from __future__ import annotations

import atexit
import logging
import sys
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def output_count(path: str | Path) -> str:
    """What an output holds: Parquet/CSV/TSV rows, files of a folder, else bytes."""
    path = Path(path)
    if path.is_dir():
        return f"{sum(1 for p in path.rglob('*') if p.is_file())} files"
    if not path.exists():
        return "missing"
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return f"{pq.read_metadata(path).num_rows} rows"
    if path.suffix in (".csv", ".tsv"):
        with path.open("rb") as handle:
            return f"{max(0, sum(1 for _ in handle) - 1)} rows"
    return f"{path.stat().st_size} bytes"


def resident_mb() -> float:
    """The process's resident memory now (MB; Linux ``VmRSS``, else the peak so far): jobs log
    it after loading so that benchmarks/scale.py can fit their state apart from DuckDB's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log_resident(log: logging.Logger, after: str, memory_mb: int, mem_mb: int) -> None:
    """Log the job's resident memory once its DuckDB connection is closed, with the DuckDB limit
    it ran under and the job's request: benchmarks/scale.py bounds a DuckDB job's peak at full
    size by this state (fitted over the sizes) plus DuckDB's limit there (it spills beyond)."""
    log.info(
        "resident after %s: %.0f MB (DuckDB limit %d MB of mem_mb %d)",
        after,
        resident_mb(),
        memory_mb,
        mem_mb,
    )


def _files(named) -> list[str]:
    """Paths of a Snakemake Namedlist, or of a stand-in namespace (tests run scripts with one)."""
    values = list(named) if hasattr(named, "__iter__") else list(vars(named).values())
    flat = []
    for value in values:
        flat.extend([value] if isinstance(value, (str, Path)) else list(value))
    return [str(v) for v in flat]


def is_own_error(kind: type) -> bool:
    """Whether an exception class is one of factprobe's own errors (defined in the package)."""
    return any(k.__module__.split(".")[0] == "factprobe" for k in kind.__mro__)


def failure_line(where: str, error: BaseException, log_path: str | Path) -> str:
    """The one console line of a job that failed with a factprobe error."""
    message = " ".join(str(error).split()) or type(error).__name__
    return f"factprobe: {where} failed: {type(error).__name__}: {message} (traceback in {log_path})"


def rule_logger(smk) -> logging.Logger:
    """Configure logging to ``smk.log[0]`` and return the rule's logger.

    Logs the rule, wildcards, input/output file counts and the ``factprobe`` package location at
    start, an uncaught exception with its traceback, and the row count of every output at exit.
    """
    import factprobe

    logging.basicConfig(filename=smk.log[0], level=logging.INFO, format=FORMAT, force=True)
    rule = getattr(smk, "rule", Path(sys.argv[0]).stem)
    log = logging.getLogger(rule)
    wildcards = dict(smk.wildcards.items()) if hasattr(smk.wildcards, "items") else vars(smk.wildcards)
    log.info(
        "rule %s %s: %d input file(s), %d output file(s); library %s",
        rule,
        wildcards,
        len(_files(smk.input)),
        len(_files(smk.output)),
        Path(factprobe.__file__).resolve().parent,
    )
    previous = sys.excepthook
    where = f"{rule} ({', '.join(f'{k}={v}' for k, v in wildcards.items())})" if wildcards else rule

    def log_failure(kind, value, trace) -> None:
        from factprobe.plumbing.osfault import fault_line, is_os_fault

        log.error("failed", exc_info=(kind, value, trace))
        if is_own_error(kind):
            sys.stderr.write(failure_line(where, value, smk.log[0]) + "\n")
        elif is_os_fault(value):
            sys.stderr.write(fault_line(where, value, smk.log[0]) + "\n")
        else:
            previous(kind, value, trace)

    sys.excepthook = log_failure
    outputs = _files(smk.output)

    def report() -> None:
        for path in outputs:
            log.info("output %s: %s", path, output_count(path))

    atexit.register(report)
    return log
