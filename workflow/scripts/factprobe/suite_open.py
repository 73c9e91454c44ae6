"""A built suite found from Python: its folder, its run's config and the paths of its tables.

:func:`open_suite` reads ``results/probes/<suite>`` of a working directory (the one Snakemake
ran in: ``config/config.yaml`` next to ``results/``), validates that directory's config exactly
as the workflow does at parse time (:func:`factprobe.config_check.load_run`) and resolves the
suite's settings with :mod:`factprobe.plumbing.run_settings`, so :mod:`factprobe.api` reads the same
settings the rules receive. Every problem is a :class:`SetupError` naming the path and the fix.
Light: standard library, yaml and the settings modules.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The repository root (code, schemas and bundled resources), as ``common.smk``'s WORKFLOW_ROOT.
WORKFLOW_ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = WORKFLOW_ROOT / "workflow" / "schemas"

log = logging.getLogger(__name__)


class SetupError(ValueError):
    """Bad input or set-up (a missing table, model file or config; a table from another engine
    or for another model); the message names the path and what to do."""


@dataclass(frozen=True)
class Suite:
    """One built suite: its name, folder (``results/probes/<name>``), the working directory it
    was built in, the run's validated config, resolved settings and models.tsv rows."""

    name: str
    folder: Path
    workdir: Path
    config_file: str
    cfg: Any  # factprobe.settings.Config
    run: Any  # factprobe.plumbing.run_settings.RunSettings
    models: dict[str, dict]

    @property
    def results(self) -> Path:
        return self.workdir / "results"

    def table(self, name: str) -> Path:
        """``results/probes/<suite>/<name>.parquet``, which must exist."""
        path = self.folder / f"{name}.parquet"
        if not path.is_file():
            raise SetupError(
                f"{path}: the suite's {name} table is missing; build it with "
                f"`snakemake --cores 2 {path.relative_to(self.workdir)}` in {self.workdir}"
            )
        return path

    def tables(self, model: str | None = None) -> dict[str, Path | list[Path]]:
        """The named tables scoring and the measures read (``score_inputs``, ``functions/score.smk``):
        prompts, candidates, forms and facts, plus translations and subject swaps (sentence mode)
        where the suite has them, and ``model``'s ApprOpt list (distractors paper §3.3) where the
        suite draws one per model: required for a row of the suite's models.tsv (the workflow
        made it), left out for any other model (a list is found with the model's own scores:
        rule ``appropt_distractors``), whose measures then have no ``appropt`` strategy."""
        from factprobe import registries
        from factprobe.plumbing.run_settings import translated_suites

        files: dict[str, Path | list[Path]] = {k: self.table(k) for k in ("prompts", "candidates", "forms")}
        files["facts"] = self.table("facts")
        if self.name in translated_suites(self.cfg) and self.cfg.scoring.include_translated:
            files["translated_prompts"] = self.table("translated_prompts")
            files["translated_forms"] = self.table("translated_forms")
        if self.run.scoring_modes[self.name] == "sentence":
            files["subject_swaps"] = self.table("subject_swaps")
        if registries.needs(self.run.distractors[self.name]["strategies"], "per_model"):
            if model in self.models:
                files["appropt"] = self.table(f"appropt/{model}")
                files["appropt_forms"] = self.table(f"appropt/{model}.forms")
            else:
                log.warning(
                    "suite %s: model %s has no ApprOpt list (per model, rule appropt_distractors); "
                    "scored and measured without the appropt strategy",
                    self.name,
                    model,
                )
        return files


def read_config(path: Path) -> dict:
    """A config file as Snakemake's ``configfile:`` reads it (YAML)."""
    import yaml

    if not path.is_file():
        raise SetupError(
            f"{path}: config file not found; pass config= the file the suite was built with "
            "(snakemake's --configfile), or open the suite folder inside its working directory"
        )
    return yaml.safe_load(path.read_text()) or {}


def load_workdir(workdir: Path, config: str | Path | dict | None = None):
    """(config file name, Config, dumps rows, models rows) of a working directory, validated as
    the workflow validates them (relative paths read from ``workdir``, then the workflow's own)."""
    from factprobe.config_check import load_run

    if isinstance(config, dict):
        raw, source = config, "config (a dict)"
    else:
        file = Path(config) if config is not None else workdir / "config" / "config.yaml"
        raw, source = read_config(file), str(file)
    with contextlib.chdir(workdir):
        try:
            cfg, dumps, models = load_run(raw, WORKFLOW_ROOT, SCHEMAS, source)
        except SetupError:
            raise
        except Exception as exc:  # ConfigError and the registry errors: say where it was read from
            raise SetupError(f"{source} (working directory {workdir}): {exc}") from exc
    return source, cfg, dumps, models


def open_suite(suite: str | Path | Suite, config: str | Path | dict | None = None) -> Suite:
    """The built suite at ``suite`` (``<workdir>/results/probes/<name>``), with the settings of
    ``config`` (default ``<workdir>/config/config.yaml``, the file ``make demo`` uses)."""
    if isinstance(suite, Suite):
        return suite
    from factprobe.plumbing.run_settings import resolve

    folder = Path(suite).expanduser().resolve()
    if not folder.is_dir():
        raise SetupError(
            f"{folder}: no such suite folder; build the suite first (`make demo`, or `snakemake "
            "results/probes/<suite>/facts.parquet`) and pass results/probes/<suite>"
        )
    if folder.parent.name != "probes" or folder.parent.parent.name != "results":
        raise SetupError(
            f"{folder}: not a built suite folder; pass <working directory>/results/probes/<suite>"
        )
    workdir = folder.parents[2]
    source, cfg, dumps, models = load_workdir(workdir, config)
    if folder.name not in cfg.suites:
        raise SetupError(
            f"{folder}: {source} has no suite {folder.name!r} (it has {sorted(cfg.suites)}); pass "
            "config= the file the suite was built with"
        )
    rows = {row["name"]: row for row in models}
    run = resolve(cfg, {row["dump"]: row for row in dumps}, rows)
    return Suite(folder.name, folder, workdir, source, cfg, run, rows)
