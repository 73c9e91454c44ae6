"""pytest plugin: a loud summary of skipped tests and their reasons.

A skipped test is a check that did not run (the report rendering test without Chromium, the
SLURM test without the executor plugin); ``make test`` must not look green without saying so.
Loaded by tests/conftest.py.
"""

from collections import defaultdict


def skip_reason(report) -> str:
    """The reason of a skip report (``longrepr`` is ``(path, lineno, "Skipped: reason")``)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.when in ("setup", "call")]
    if not skipped:
        return
    by_reason: dict[str, list[str]] = defaultdict(list)
    for report in skipped:
        by_reason[skip_reason(report)].append(report.nodeid)
    terminalreporter.section(
        f"{len(skipped)} test(s) SKIPPED: not run, not passed", sep="!", red=True, bold=True
    )
    for reason, nodes in sorted(by_reason.items()):
        terminalreporter.line(f"{len(nodes)} x {reason}", red=True, bold=True)
        for node in sorted(nodes):
            terminalreporter.line(f"    {node}")
