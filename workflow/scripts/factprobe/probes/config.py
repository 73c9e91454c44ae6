"""Cross-key checks of the ``suites`` and ``templates`` config sections that JSON schema cannot express."""

from __future__ import annotations

from factprobe.registry import ConfigError


def check_suites(suites: dict, templates: dict, enabled: list[str]) -> None:
    """Dumps enabled, template sets defined, plausibility dates ordered old <= cutoff < dump."""
    sets = templates.get("sets", {})
    for name, suite in suites.items():
        where = f"config/config.yaml: suites.{name}"
        if suite["dump"] not in enabled:
            raise ConfigError(f"{where}.dump: {suite['dump']} is not an enabled dump ({enabled})")
        for set_name in suite.get("templates", {}).get("sets", ["team"]):
            if set_name not in sets:
                raise ConfigError(f"{where}.templates.sets: {set_name!r} is not defined in templates.sets")
        if suite["kind"] == "plausibility":
            old, cut, new = suite["diff_old"], suite["cutoff"], suite["dump"]
            if old not in enabled:
                raise ConfigError(f"{where}.diff_old: {old} is not an enabled dump ({enabled})")
            if not old <= cut < new:
                raise ConfigError(f"{where}: need diff_old <= cutoff < dump, got {old}, {cut}, {new}")
