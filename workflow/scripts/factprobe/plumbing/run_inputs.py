"""Which files a rule reads, worked out at parse time for the rules' input functions.

The input functions (``workflow/rules/functions/<stage>.smk``) stay one-liners: the choices (which dump
file, which model folder, which templates, which optional tables) are made here, as small pure
functions of the typed config (:mod:`factprobe.settings`), the registry rows and the rules' output
path templates (``{dump}``, ``{suite}``, ``{model}`` placeholders), so they are tested in Python
(``tests/unit/test_run_inputs.py``). Light (stdlib + settings): imported while the workflow parses.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from factprobe import config_rules, registries
from factprobe import settings as S
from factprobe.plugins import ENV as PLUGINS_ENV
from factprobe.plumbing.code_inputs import library_modules, plugin_files, stamp_file, write_stamp
from factprobe.registry import RegistryError
from factprobe.settings import Config

#: Extensions of a dump file, longest first (a ``.json.gz`` is not a ``.json``).
DUMP_EXTS = ("json.bz2", "json.gz", "json")


def dump_ext(name: str) -> str:
    """Extension of a dump file name or URL (query string ignored): json, json.gz or json.bz2."""
    for ext in DUMP_EXTS:
        if name.split("?")[0].endswith(f".{ext}"):
            return ext
    raise ValueError(f"cannot tell the format of {name}")


def dump_file(row: Mapping, download: str) -> str:
    """Dump file of a dumps.tsv row: its ``path`` in place, else the downloaded copy (``download``,
    rule download_dump's output, with the extension of the row's ``url`` or its ``format``)."""
    if "path" in row:
        return str(row["path"])
    ext = dump_ext(row["url"]) if "url" in row else row["format"]  # a `source` row
    return download.format(dump=row["dump"], ext=ext)


def local_dump_checksum(row: Mapping) -> str:
    """Checksum of a dump used in place (``path`` row), verified by its extraction job (parsing,
    and so ``snakemake -n``, never reads a dump); "" for downloads (download_dump verifies them)."""
    return row.get("checksum", "") if "path" in row else ""


def extract_path(template: str, dump: str, dump_rows: Mapping, registry: str) -> str:
    """An extraction table of a registered ``dump`` (``template`` with ``{dump}``)."""
    if dump not in dump_rows:
        raise ValueError(f"{registry}: dump {dump} is not registered; add a row or fix the target")
    return template.format(dump=dump)


def diff_inputs(cfg: Config, old: str, new: str, extract: Callable[[str, str], str]) -> dict:
    """Both dumps' claims, entities and properties tables (``extract(name, dump)``), plus the
    single-value list when ``diff.single_value`` reads it."""
    if int(old) >= int(new):
        raise ValueError(f"diff {old}_{new}: the old dump must be the earlier one")
    files = {
        f"{side}_{name}": extract(name, dump)
        for side, dump in (("old", old), ("new", new))
        for name in ("claims", "entities", "properties")
    }
    if cfg.diff.single_value in ("list", "both"):
        files["single_value_list"] = cfg.diff.single_value_list
    return files


def earlier_dumps(enabled: Iterable[str], dump: str) -> list[str]:
    """The enabled dumps before ``dump`` (objects present only there are "past")."""
    return [d for d in enabled if d < dump]


def released_inputs(cfg: Config, suite: str, extract: Callable[[str, str], str], lib: list[str]) -> dict:
    """The released files of an imported suite, the labels of its dumps, its dump's entities and
    properties (``extract(name, dump)``)."""
    block = cfg.suites[suite]
    return {
        "released": block.source.files(),
        "labels": [extract("labels", d) for d in config_rules.suite_dumps(block)],
        "entities": extract("entities", block.dump),
        "properties": extract("properties", block.dump),
        "lib": lib,
    }


def probe_inputs(
    cfg: Config,
    suite: str,
    template_sets: Mapping[str, Mapping],
    extract: Callable[[str, str], str],
    lib: list[str],
    changes: str,
    temporal: str,
    release_only: bool = False,
) -> dict:
    """Extraction tables of the suite's dump (``extract(name, dump)``), labels of its label dumps,
    its templates, the diff of a plausibility suite (``changes``, ``{old}``/``{new}``), the
    temporal view of a ``temporal_only`` suite (``temporal``, ``{dump}``) and a listed-facts file.
    A suite that reads the release alone (``release_only``,
    :func:`factprobe.plumbing.run_settings.reads_release_only`) gets its templates and library only."""
    block = cfg.suites[suite]
    if release_only:
        return {"templates": template_files(cfg, suite, template_sets), "lib": lib}
    files = {
        "claims": extract("claims", block.dump),
        "entities": extract("entities", block.dump),
        "labels": [extract("labels", d) for d in config_rules.suite_dumps(block)],
        "templates": template_files(cfg, suite, template_sets),
        "lib": lib,
    }
    if block.kind == "plausibility":
        files["changes"] = changes.format(old=block.diff_old, new=block.dump)
    if block.temporal_only:
        files["temporal"] = temporal.format(dump=block.dump)
    return {**files, **listed_source(cfg, suite)}


def timeline_inputs(cfg: Config, suite: str, enabled: list[str], changes: str) -> dict:
    """The diffs of a ``timeline: {by: diff}`` suite: each consecutive pair of enabled dumps up
    to its dump (``changes``: the ``{old}``/``{new}`` pattern); nothing for other suites."""
    block = cfg.suites[suite]
    if block.timeline is None or block.timeline.by != "diff":
        return {}
    dumps = config_rules.timeline_dumps(block, enabled)
    return {
        "timeline_changes": [changes.format(old=a, new=b) for a, b in zip(dumps, dumps[1:], strict=False)]
    }


def template_files(cfg: Config, suite: str, template_sets: Mapping[str, Mapping]) -> list[str]:
    """Every template file of a suite's template sets in its languages."""
    languages = cfg.suites[suite].languages
    return [
        path
        for entry in template_sets[suite].values()
        for path in S.load_settings(S.TemplateSet, entry).files(languages)
    ]


def listed_source(cfg: Config, suite: str) -> dict[str, str]:
    """A listed-facts file as input ``source`` where it exists (edits rerun the suite); a missing
    one fails build_probes with an error naming it, so paper configs plan without the data."""
    source = cfg.suites[suite].source
    if source.listed and os.path.exists(source.path):
        return {"source": source.path}
    return {}


def model_source_files(row: Mapping) -> dict[str, str]:
    """Local files of a models.tsv source (a folder or a .gguf file); none for hub ids and
    installed packages, whose content the row's revision / the package version pins."""
    source = row["source"]
    if source.startswith(("builtin:", "pypi:")) or not os.path.exists(source):
        return {}
    return {"source": source}


def is_control(row: Mapping) -> bool:
    """Whether a models.tsv row is the workflow-trained builtin:control model."""
    return row["source"] == "builtin:control"


def translating_models(cfg: Config, mt_rows: list[str], folder: Callable[[str], str]) -> dict:
    """The folders (``folder(model)``) of the models translate_prompts loads, by input name:
    ``llm`` (translate.backend llm: the causal LM, when named) or ``mt_models`` (seq2seq: the
    models.tsv rows named in translate.model(s)); none when no model translates."""
    if cfg.translate.backend == "llm":
        return {"llm": folder(cfg.translate.llm)} if cfg.translate.llm else {}
    return {"mt_models": [folder(m) for m in mt_rows]} if mt_rows else {}


def needs_encoder(cfg: Config, families: Iterable[str], model_rows: Mapping) -> str | None:
    """The BERTScore encoder's models.tsv row when the suite computes overlap and
    ``metrics.family_settings.overlap.encoder`` names a row (its prepared folder is then an
    input), else None."""
    encoder = cfg.metrics.own("overlap")["encoder"]
    return encoder if "overlap" in families and encoder in model_rows else None


def human_suites(cfg: Config) -> list[str]:
    """Suites of the human alignment (distractors paper §4.2): listed in
    ``metrics.human_alignment.suites`` and with judged triples, a user file
    (``metrics.human_alignment.path``) or the suite's own ``source: triples`` file."""
    human = cfg.metrics.human_alignment
    return [s for s in human.suites if s in cfg.suites and (human.path or cfg.suites[s].source.entry.judged)]


#: §4.3 Table 4's two verbalizations of a verbalization-pairs suite (probes/listed.py).
ROBUSTNESS_PAIR = ["flawed", "corrected"]


def robustness_suites(cfg: Config, human_suites: list[str]) -> list[str]:
    """Suites of Table 4 (distractors paper §4.3): the ``source: verbalization-pairs`` suites,
    when a human-alignment suite gives Table 3's fold-best configurations (none without one)."""
    if not human_suites:
        return []
    return [s for s in cfg.suites if cfg.suites[s].source.entry.paired]


def human_file(cfg: Config, suite: str) -> str:
    """Judged triples of a suite's human alignment: metrics.human_alignment.path, else the suite's
    own ``source: triples`` file."""
    return cfg.metrics.human_alignment.path or cfg.suites[suite].source.path


def report_control_suites(cfg: Config, score_models: list[str]) -> list[str]:
    """Suites whose control check feeds the report's taught-vs-untaught panel: the report's control
    model is scored, the suite computes the knowledge measure and its facts are taught
    (``control.suites``)."""
    if cfg.report.control_model not in score_models:
        return []
    return [
        s
        for s in cfg.suites
        if "knowledge" in config_rules.suite_families(cfg, s) and s in cfg.control.suites
    ]


def report_control_model_suites(cfg: Config, score_models: list[str], model_rows: Mapping) -> list[str]:
    """Suites whose trained control model the report fingerprints (when one is scored)."""
    return list(cfg.suites) if any(is_control(model_rows[m]) for m in score_models) else []


def library_inputs(script: str, scripts: Path, cwd: str | Path) -> list[str]:
    """The code input of a rule: the stamp of its ``script`` (under ``scripts``) in the working
    directory ``cwd`` (:func:`factprobe.plumbing.code_inputs.write_stamp`, a relative path), which lists
    every factprobe module the script reaches (imports, registry entries, plugins:
    :mod:`factprobe.plumbing.code_inputs`) with its content hash and is rewritten when one changes. A
    script's imports are invisible to Snakemake's code trigger; with this input, editing a module
    reruns exactly the rules whose scripts reach it (config/README.md, "When jobs rerun"). One
    file rather than the modules themselves: Snakemake's planning time grows with each job's
    inputs. Worked out once per script and plugin set in a process: every job of a rule asks
    for the same input, and files do not change while Snakemake plans."""
    return [_library_stamp(script, Path(scripts), str(cwd), os.environ.get(PLUGINS_ENV, ""))]


@functools.lru_cache(maxsize=256)
def _library_stamp(script: str, scripts: Path, cwd: str, plugins_env: str) -> str:
    modules = _library_files(script, scripts, plugins_env)
    stamp = write_stamp(stamp_file(cwd, script, modules), modules, scripts)
    return os.path.relpath(stamp, cwd)


@functools.lru_cache(maxsize=128)
def _library_files(script: str, scripts: Path, plugins_env: str) -> tuple[str, ...]:
    plugins = plugin_files({PLUGINS_ENV: plugins_env}, root=scripts)
    return tuple(library_modules(scripts / script, scripts, plugins))


def loaded_plugins(scripts: Path, environ: Mapping[str, str] | None = None) -> tuple[list[str], list[Path]]:
    """The names of ``FACTPROBE_PLUGINS`` that are files and those files (the report's
    provenance hashes them; a module found nowhere is left to its import to name)."""
    value = (environ if environ is not None else os.environ).get(PLUGINS_ENV, "")
    names, files = [], []
    for name in (n.strip() for n in value.split(",")):
        found = plugin_files({PLUGINS_ENV: name}, root=Path(scripts)) if name else []
        if found:
            names.append(name)
            files.append(found[0])
    return names, files


def omega_inputs(
    cfg: Config,
    suite: str,
    probes: Mapping[str, str],
    extract: Callable[[str, str], str],
    release_only: bool = False,
) -> dict:
    """Tables Ω(f) needs: the suite's facts and entity forms (``probes``: build_probes' output
    templates), the types of its label dumps and the claims of its dump; the facts and forms
    only for a suite that reads the release alone (no Ω: its pool is the release's strings)."""
    block = cfg.suites[suite]
    if release_only:
        return {name: probes[name].format(suite=suite) for name in ("facts", "entity_forms")}
    return {
        "facts": probes["facts"].format(suite=suite),
        "entity_forms": probes["entity_forms"].format(suite=suite),
        "types": [extract("types", d) for d in config_rules.suite_dumps(block)],
        "claims": extract("claims", block.dump),
    }


def retrieve_job_inputs(
    settings: Mapping, omega: dict, lib: list[str], outputs: Mapping[str, str], prepared: str | None = None
) -> dict:
    """One retrieval job's (or shard's) inputs: the Ω tables, the files of the tables the suite's
    strategies name (:func:`table_inputs`; ``outputs``: the workflow's output templates a table
    may read, ``sem_index`` and ``temporal`` with ``{dump}``), and a shard's suite preparation
    (``prepared``, rule prepare_retrieval; None for one job)."""
    files = {**omega, "lib": lib}
    tables = table_inputs(settings, outputs)
    clash = sorted(set(tables) & {*files, "prepared"})
    if clash:
        raise RegistryError(
            f"strategy tables {registries.tables_of(settings['strategies'])}: input name(s) {clash} "
            "are the retrieval job's own (Ω tables, lib, prepared); a table's paths must name its files otherwise"
        )
    files.update(tables)
    if prepared is not None:
        files["prepared"] = prepared
    return files


def table_inputs(settings: Mapping, outputs: Mapping[str, str]) -> dict:
    """``{input name: path}`` of the tables (``registries.TABLES``) the strategies of
    ``settings["strategies"]`` name, from each table's ``paths``; a table without any reads the
    job's Ω inputs. An unregistered table fails naming the registered ones."""
    files: dict = {}
    for name in registries.tables_of(settings["strategies"]):
        paths = registries.table_entry(name).code("paths")
        if paths is not None:
            files.update(paths(settings, outputs))
    return files


def shard_prepared(suite: str, shards: int, prepared: str) -> str | None:
    """The preparation a retrieval job of ``suite`` maps (``prepared``: rule prepare_retrieval's
    output template): the suite's shards share one when ``distractors.shards`` > 1; one job
    (``shards`` 1) reads its tables itself, as a preparation would."""
    return prepared.format(suite=suite) if shards > 1 else None


def prepare_inputs(settings: Mapping, omega: dict, lib: list[str], index: str) -> dict:
    """A suite's retrieval preparation reads the Ω tables but the claims (the shards read the
    statements valid for their own subjects), unless co-occurrence counts every statement of the
    suite's relations or Ω holds every subject of them (subject side, relation pools): it then
    saves those statements once for all the shards. And the dump's semantic index when Sem
    searches exactly (it saves the type slices of the suite's objects' types)."""
    tables = registries.tables_of(settings["strategies"])
    claims = "cooccur" in tables or registries.needs_every_subject(settings)
    files = {k: v for k, v in omega.items() if k != "claims" or claims}
    files["lib"] = lib
    if "sem_index" in tables and settings.get("search") == "exact":
        files["index"] = index.format(dump=settings["dump"])
    return files


def retrieve_gather_inputs(
    suite: str, shards: int, facts: str, shard_out: Mapping[str, str], lib: list[str]
) -> dict:
    """The gather of a suite's ``shards`` retrieval shards: its facts (the row order) and the
    shards' candidates and forms (``shard_out``: retrieve_shard's output templates)."""
    keys = [{"suite": suite, "shard": s} for s in range(shards)]
    return {
        "facts": facts.format(suite=suite),
        "shards": [shard_out["candidates"].format(**k) for k in keys],
        "shard_forms": [shard_out["forms"].format(**k) for k in keys],
        "lib": lib,
    }


def timeline_params(cfg: Config) -> dict[str, dict]:
    """``suites.<s>.timeline`` of every timeline suite, as plain dicts (the ``timeline`` rule)."""
    return {name: S.plain(block.timeline) for name, block in cfg.suites.items() if block.timeline is not None}
