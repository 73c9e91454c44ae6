"""The tables a distractor strategy reads (factprobe.registries.TABLES): a strategy names them in
``tables=``; each table says which files the retrieval job reads for it (parse time) and how it
is loaded (job time). The plugin table of tests/plugins/table_plugin.py is planned, loaded and
read like the built-ins, with no library file edited.

The world is the one of test_self_candidates.py: countries 1..6 (one type), diplomatic relations
(P530) both ways between 1-2, 1-3, 2-3, 2-4, 3-4, 3-5, 4-5, 5-6; fact (1, P530, 2). Ω(f) removes
o = 2 and the valid objects 2, 3 of (1, P530). The plugin's list is Q6, Q2, Q4, Q1, Q3: Ω keeps
6, 4, 1 in that order, so with n = 2 the plugin strategy's distractors are Q6 then Q4.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from factprobe import registries
from factprobe.plumbing.code_inputs import library_modules
from factprobe.registry import RegistryError

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "workflow/scripts"
PLUGIN = ROOT / "tests/plugins/table_plugin.py"

CODE = """
import json
import pandas as pd
from factprobe import registries
from factprobe.registry import RegistryError
from factprobe.plumbing import run_inputs
from factprobe import settings as S
from factprobe.distractors.omega import Omega
from factprobe.distractors.retrieve import retrieve
from factprobe.distractors.tables import TableJob, load_tables

pairs = [(1, 2), (1, 3), (2, 3), (2, 4), (3, 4), (3, 5), (4, 5), (5, 6)]
both = pairs + [(b, a) for a, b in pairs]
statements = pd.DataFrame({"subject": [a for a, _ in both], "property": 530, "object": [b for _, b in both]})
types = pd.DataFrame({"id": range(1, 7), "type": 6})
forms = pd.DataFrame({"entity": range(1, 7), "form": [f"country {i}" for i in range(1, 7)]})
omega = Omega(types, forms, statements, form_threshold=None)
facts = pd.DataFrame({"fact_id": ["Q1|P530|Q2"], "subject": ["Q1"], "property": ["P530"], "object": ["Q2"]})
out = {}

# Parse time: the job's inputs gain the table's file only where a strategy names the table.
omega_files = {"facts": "p/facts", "entity_forms": "p/ef", "types": ["w/types"], "claims": "w/claims"}
outputs = {"sem_index": "i/{dump}", "temporal": "t/{dump}"}
plan = lambda names: run_inputs.retrieve_job_inputs(  # noqa: E731
    {"strategies": names, "dump": "20141201"}, omega_files, ["lib"], outputs
)
out["planned"] = plan(["random", "toy_preferred", "sem"])
out["plain"] = plan(["random", "sem"])

# Job time: the loader reads the file the plan named; the strategy reads it from its context.
def settings(names):
    return S.Retrieve(strategies=names, n=2, languages=["en"], dump="20141201",
                      strategy_settings={"cooccur": {"n": 3, "sides": ["object"]}}, form_threshold=None, pool_size=5, search="exact",
                      valid_ranks="non_deprecated", ef_search=200)

job = TableJob({"toy_preferred": out["planned"]["toy_preferred"]}, {}, facts)
tables = load_tables(registries.tables_of(["random", "toy_preferred"]), job)
out["loaded"] = tables
cand = retrieve(facts, omega, settings(["toy_preferred"]), tables)
out["rows"] = cand[cand["role"] == "distractor"][["entity", "rank"]].values.tolist()

# A strategy's context holds the tables the suite's strategies name, no other given one.
seen = []
registries.register_strategy("spy", lambda ctx, i, fid, f: seen.append(sorted(ctx.tables)) or [])
retrieve(facts, omega, settings(["spy"]), {**tables, "cooccur": None})
retrieve(facts, omega, settings(["spy", "toy_preferred"]), {**tables, "cooccur": None})
out["seen"] = seen

# A job without the table's input, a table naming a file like the job's own inputs, a strategy
# naming a table no module registered: each fails saying what to do.
errors = []
try:
    load_tables(["toy_preferred"], TableJob({"facts": "p/facts"}, {}, facts))
except KeyError as err:
    errors.append(str(err))
registries.register_table("clashing", "nowhere:load", lambda settings, outputs: {"claims": "x"})
registries.register_strategy("clashes", None, tables=("clashing",))
registries.register_strategy("lost", None, tables=("nowhere",))
try:
    plan(["clashes"])
except RegistryError as err:
    errors.append(str(err))
try:
    S.check_strategy_names("distractors.strategies", ["random", "lost"])
except S.ConfigError as err:
    errors.append(str(err))
try:
    plan(["lost"])
except RegistryError as err:
    errors.append(str(err))
print(json.dumps(out))
print(json.dumps(errors))
"""


def test_a_plugin_table_is_planned_loaded_and_read_by_the_strategy_naming_it():
    env = {**os.environ, "FACTPROBE_PLUGINS": str(PLUGIN), "PYTHONPATH": str(SCRIPTS)}
    proc = subprocess.run(
        [sys.executable, "-c", CODE], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    out, errors = json.loads(lines[-2]), json.loads(lines[-1])
    base = {
        "facts": "p/facts",
        "entity_forms": "p/ef",
        "types": ["w/types"],
        "claims": "w/claims",
        "lib": ["lib"],
    }
    assert out["plain"] == {**base, "index": "i/20141201"}
    assert out["planned"] == {
        **base,
        "toy_preferred": str(ROOT / "tests/plugins/toy_preferred.txt"),
        "index": "i/20141201",
    }
    assert out["loaded"] == {"toy_preferred": [6, 2, 4, 1, 3]}
    assert out["rows"] == [["Q6", 1], ["Q4", 2]]
    assert out["seen"] == [[], ["toy_preferred"]]
    assert "no input 'toy_preferred'" in errors[0] and "paths" in errors[0]
    assert "input name(s) ['claims'] are the retrieval job's own" in errors[1]
    assert "read table(s) ['nowhere'] that no module registered" in errors[2]
    assert "'toy_preferred'" in errors[2] and "'sem_index'" in errors[2]
    assert "no table 'nowhere' is registered" in errors[3]


@pytest.mark.parametrize(
    ("keyword", "meant"),
    [
        ("index", "tables=('sem_index',)"),
        ("temporal", "tables=('temporal',)"),
        ("statements", "tables=('cooccur',)"),
    ],
)
def test_a_former_need_is_refused_naming_the_table(keyword, meant):
    """The booleans a strategy once declared are refused at registration, naming ``tables=``."""
    with pytest.raises(RegistryError, match=rf"no keyword {keyword}=; .*{re.escape(meant)}"):
        registries.register_strategy("former", None, **{keyword: True})
    with pytest.raises(RegistryError, match="tables= is a tuple of table names"):
        registries.strategy("former", tables="cooccur")
    with pytest.raises(RegistryError, match=r"no keyword path=; the keywords are \['paths'"):
        registries.register_table("former", "x:y", path="z")
    assert "former" not in registries.STRATEGIES and "former" not in registries.TABLES


def test_the_built_in_strategies_name_the_tables_their_retrievers_read():
    """What Context held field by field is now named per strategy: Sem the dump's index,
    Temp+Sem the index and the temporal view, co-occurrence the relations' statements, the
    same-relation pools the entity forms; Random reads Ω alone."""
    assert {n: registries.STRATEGIES[n].tables for n in ("random", "sem", "temp+sem", "cooccur", "pool")} == {
        "random": (),
        "sem": ("sem_index",),
        "temp+sem": ("sem_index", "temporal"),
        "cooccur": ("cooccur",),
        "pool": ("entity_forms",),
    }
    assert list(registries.TABLES)[:4] == ["sem_index", "temporal", "cooccur", "entity_forms"]


def test_the_table_loaders_and_a_plugin_table_are_inputs_of_retrieval_only():
    """Code tracking: the built-in loaders' module is an input of the retrieval rule, not of the
    measures; a plugin filling the tables' registry joins the retrieval rule."""
    module = "factprobe/distractors/tables.py"
    assert module in library_modules(SCRIPTS / "retrieve_distractors.py", SCRIPTS)
    assert module not in library_modules(SCRIPTS / "compute_metrics.py", SCRIPTS)
    assert str(PLUGIN) in library_modules(SCRIPTS / "retrieve_distractors.py", SCRIPTS, [PLUGIN])
    assert str(PLUGIN) not in library_modules(SCRIPTS / "extract_dump.py", SCRIPTS, [PLUGIN])


@pytest.mark.full
def test_the_retrieval_rule_reads_the_plugin_tables_file(tmp_path):
    """A dry run of the demo with the knowledge suite running the plugin strategy: its retrieval
    job lists the table's file among its inputs (an edit of the list reruns it); the other
    suites' jobs do not."""
    import shutil

    import yaml

    for name in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / "resources").symlink_to(ROOT / "resources")
    config = yaml.safe_load((tmp_path / "config/config.yaml").read_text())
    config["suites"]["knowledge"]["distractors"] = {"strategies": ["random", "toy_preferred"]}
    (tmp_path / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "FACTPROBE_PLUGINS": str(PLUGIN)}
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--forceall", "--cores", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    inputs = dict(
        re.findall(
            r"rule retrieve_distractors:\n    input: (.*)\n(?:    .*\n)*?    wildcards: suite=(\w+)",
            proc.stdout,
        )
    )
    inputs = {suite: files.split(", ") for files, suite in inputs.items()}
    assert set(inputs) >= {"knowledge", "plausibility", "multilingual"}
    listed = str(ROOT / "tests/plugins/toy_preferred.txt")
    assert listed in inputs["knowledge"]
    assert not any(p.startswith("results/distractors/index") for p in inputs["knowledge"])
    assert [s for s, files in inputs.items() if listed in files] == ["knowledge"]
