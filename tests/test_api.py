"""factprobe from Python (factprobe.api, docs/api.md) on the session's .test run
(conftest.dot_test_run: one dump, the knowledge suite, the builtin control model).

The API calls the rule scripts' library functions with the settings the rules receive, so its
tables must equal the workflow's bit for bit; scoring fails closed (a failed relation raises, or
comes back as explicit missing rows that the measures refuse); bad input names the path and the fix.
"""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from factprobe import api, contracts
from factprobe.metrics.pipeline import leaderboard
from factprobe.scoring.failclosed import ScoringError

ROOT = Path(__file__).resolve().parents[1]
SUITE = "results/probes/knowledge"


@pytest.fixture(scope="module")
def control_tables(dot_test_run):
    """The API's scores of the .test control model (scored once per module)."""
    return api.score_tables("builtin:control", dot_test_run / SUITE)


def test_import_factprobe_loads_no_science_stack():
    """``import factprobe`` and ``from factprobe import api`` (and opening a suite's config) load
    neither torch nor transformers, nor pandas: they come with the first model or table."""
    code = (
        "import sys, factprobe\n"
        "heavy = ('torch', 'transformers', 'pandas')\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "from factprobe import api\n"
        "assert factprobe.score is api.score and factprobe.summary is api.summary\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    env = {"PYTHONPATH": str(ROOT / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "[]"]


def test_api_tables_equal_the_workflow_tables(dot_test_run, control_tables):
    """score = results/scores (rows, types and values exactly, top-k too), measures =
    results/metrics per fact, summary = the suite's leaderboard rows from headline.parquet."""
    results = dot_test_run / "results"
    scores = contracts.read("scores", results / "scores/knowledge/control.parquet")
    pd.testing.assert_frame_equal(control_tables.scores, scores, check_exact=True)
    topk = contracts.read("topk", results / "scores/knowledge/control.topk.parquet")
    pd.testing.assert_frame_equal(control_tables.topk, topk, check_exact=True)
    per_fact = contracts.read("fact_metrics", results / "metrics/knowledge/control.parquet")
    pd.testing.assert_frame_equal(
        api.measures(control_tables, dot_test_run / SUITE), per_fact, check_exact=True
    )
    # The workflow's own score table, read back through its engine stamp, gives the same measures.
    stamped = api.measures(results / "scores/knowledge/control.parquet", dot_test_run / SUITE)
    pd.testing.assert_frame_equal(stamped, per_fact, check_exact=True)
    board = leaderboard(
        {"knowledge": contracts.read("headline", results / "metrics/knowledge/headline.parquet")}
    )
    summary = api.summary({"control": control_tables}, dot_test_run / SUITE)
    pd.testing.assert_frame_equal(summary, board, check_exact=True)


def nan_for_relation(monkeypatch, suite: Path, relation: str) -> set:
    """Make the HF engine return NaN for every request of ``relation``'s prompts (a float16
    overflow, say); the prompt ids of that relation."""
    from factprobe.lm.api import LoglikResult
    from factprobe.lm.hf import HFCausalLM

    facts = contracts.read("facts", suite / "facts.parquet")
    prompts = contracts.read("prompts", suite / "prompts.parquet")
    ids = set(facts.loc[facts["property"] == relation, "fact_id"])
    chosen = prompts[prompts["fact_id"].isin(ids)]
    texts = set(chosen["context"].fillna("") + chosen["text"])
    real = HFCausalLM.loglikelihood

    def broken(self, requests, progress=False, on_done=None):
        out = real(self, requests, progress=progress, on_done=on_done)
        return [
            LoglikResult(math.nan, r.n_tokens, r.first_logprob) if q.context in texts else r
            for q, r in zip(requests, out, strict=True)
        ]

    monkeypatch.setattr(HFCausalLM, "loglikelihood", broken)
    return set(chosen["prompt_id"])


def test_a_failed_relation_raises_or_comes_back_as_missing_rows(dot_test_run, control_tables, monkeypatch):
    suite = dot_test_run / SUITE
    relation = sorted(contracts.read("facts", suite / "facts.parquet")["property"])[0]
    failed = nan_for_relation(monkeypatch, suite, relation)
    with pytest.raises(ScoringError, match="logprob is nan, not a finite number"):
        api.score("builtin:control", suite)
    scores = api.score("builtin:control", suite, on_error="missing")
    full = control_tables.scores
    # Never a shorter table: every pair, the failed relation's marked missing, the rest as before.
    assert len(scores) == len(full)
    missing = scores["missing"].to_numpy()
    assert set(scores.loc[missing, "prompt_id"]) == failed
    assert set(scores.loc[missing, "relation"]) == {relation} and scores.loc[missing, "logprob"].isna().all()
    assert scores.loc[missing, "error"].str.contains("logprob is nan").all()
    kept = scores.loc[~missing, full.columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, full[~full["prompt_id"].isin(failed)].reset_index(drop=True))
    with pytest.raises(api.IncompleteScores, match=f"relations \\['{relation}'\\]"):
        api.measures(scores, suite, topk=control_tables.topk)


def test_a_shorter_score_table_is_refused(dot_test_run, control_tables):
    short = control_tables.scores[
        control_tables.scores["fact_id"] != control_tables.scores["fact_id"].iloc[0]
    ]
    with pytest.raises(ValueError, match="scores are incomplete"):
        api.measures(short, dot_test_run / SUITE, topk=control_tables.topk)


def copy_suite(dot_test_run: Path, tmp_path: Path, drop: str = "") -> Path:
    """The .test working directory's config and knowledge suite copied, without table ``drop``."""
    shutil.copytree(dot_test_run / "config", tmp_path / "config")
    shutil.copytree(dot_test_run / SUITE, tmp_path / SUITE, ignore=shutil.ignore_patterns(drop or "-"))
    return tmp_path / SUITE


def test_a_suite_folder_missing_a_table_names_it(dot_test_run, tmp_path):
    suite = copy_suite(dot_test_run, tmp_path, "candidates.parquet")
    with pytest.raises(api.SetupError, match=r"candidates\.parquet: the suite's candidates table is missing"):
        api.score("builtin:control", suite)
    with pytest.raises(api.SetupError, match="no such suite folder"):
        api.open_suite(tmp_path / "results/probes/nothing")
    (tmp_path / "results/probes/other").mkdir()
    with pytest.raises(api.SetupError, match="has no suite 'other'"):
        api.open_suite(tmp_path / "results/probes/other")


def test_a_model_folder_without_weights_or_tokenizer_names_what_is_missing(dot_test_run, tmp_path):
    control = dot_test_run / "results/models/control/knowledge"
    no_weights, no_tokenizer = tmp_path / "no_weights", tmp_path / "no_tokenizer"
    shutil.copytree(control, no_weights, ignore=shutil.ignore_patterns("*.safetensors"))
    shutil.copytree(control, no_tokenizer, ignore=shutil.ignore_patterns("tokenizer*"))
    with pytest.raises(api.SetupError, match=f"{no_weights}: model folder without weights;"):
        api.score(no_weights, dot_test_run / SUITE)
    with pytest.raises(api.SetupError, match=f"{no_tokenizer}: model folder without a tokenizer;"):
        api.score(no_tokenizer, dot_test_run / SUITE)
    with pytest.raises(api.SetupError, match="no such model folder, and no row 'nothing'"):
        api.score("nothing", dot_test_run / SUITE)


def test_a_suite_built_for_a_later_cutoff_than_the_model_is_refused(tmp_path):
    """The demo's plausibility suite keeps facts after 2016-01-01 (PROBELM §3.1): a model whose
    cut-off is 2015-06-01 would miss facts new to it, so the suite is refused before any load."""
    (tmp_path / "results/probes/plausibility").mkdir(parents=True)
    suite = api.open_suite(tmp_path / "results/probes/plausibility", config=ROOT / "config/config.yaml")
    row = {"name": "early", "source": "builtin:control", "cutoff": "2015-06-01"}
    with pytest.raises(api.SetupError, match="built for cut-off 20160101.*set suites.plausibility.cutoff"):
        api.score(row, suite)
    assert api.model_cutoff(suite, {**row, "cutoff": "2017-01-01"})["cutoff"] == "20170101"


def test_scores_of_another_engine_version_are_refused(dot_test_run, tmp_path):
    source = dot_test_run / "results/scores/knowledge/control.parquet"
    assert contracts.engine_version(source) == api.engine_version()
    for stamp, said in ((b"loglik-0", "engine loglik-0"), (None, "an engine without a version stamp")):
        table = pq.read_table(source)
        table = table.replace_schema_metadata({contracts.ENGINE_KEY: stamp} if stamp else None)
        path = tmp_path / f"{stamp}" / "control.parquet"
        path.parent.mkdir()
        pq.write_table(table, path)
        shutil.copy(source.with_name("control.topk.parquet"), path.with_name("control.topk.parquet"))
        with pytest.raises(api.SetupError, match=f"{path}: scores written by {said}.*delete the file"):
            api.measures(path, dot_test_run / SUITE)


def test_the_engine_stamp_is_the_schema_metadata_of_score_tables(tmp_path):
    from factprobe.scoring.jobs import engine_metadata

    frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in contracts.columns("scores")})
    contracts.write("scores", frame, tmp_path / "s.parquet", engine_metadata())
    contracts.write("scores", frame, tmp_path / "plain.parquet")
    assert pq.read_schema(tmp_path / "s.parquet").metadata == {
        b"factprobe.engine": api.engine_version().encode()
    }
    assert contracts.engine_version(tmp_path / "s.parquet") == api.engine_version()
    assert contracts.engine_version(tmp_path / "plain.parquet") is None  # written without one


def python_blocks(page: Path) -> list[str]:
    """The ```python blocks of a Markdown page, in order."""
    text, blocks = page.read_text(), []
    parts = text.split("```python\n")[1:]
    for part in parts:
        blocks.append(part.split("```", 1)[0])
    return blocks


def test_docs_api_page_runs_on_a_built_suite(dot_test_run, capsys):
    """Every Python block of docs/api.md, in order, in one namespace, with its working directory
    (the line ``WORKDIR = Path(".")``) set to the .test run; its outputs are real tables."""
    blocks = python_blocks(ROOT / "docs/api.md")
    assert len(blocks) >= 4
    line = 'WORKDIR = Path(".")  # where `make demo` ran: the repository'
    assert sum(b.count(line) for b in blocks) == 1
    namespace: dict = {}
    for block in blocks:
        exec(
            compile(block.replace(line, f"WORKDIR = Path({str(dot_test_run)!r})"), "docs/api.md", "exec"),
            namespace,
        )
    results = dot_test_run / "results"
    pd.testing.assert_frame_equal(
        namespace["per_fact"], contracts.read("fact_metrics", results / "metrics/knowledge/control.parquet")
    )
    assert set(namespace["board"]["model"]) == {"control", "loaded control"}
    assert json.dumps(namespace["scores"].attrs["factprobe"])  # plain values only
    assert "k_avg" in capsys.readouterr().out


def test_timeline_reads_the_suites_timeline_block_bootstrap_and_declared_cutoffs(dot_test_run, tmp_path):
    """api.timeline on a timeline suite (the .test facts dealt round three dated slices and the
    static one) whose per-fact values drop after the second dated slice (1 before, 0 after, static 1): the break is found there (two slices known, date
    20120101), with the block's measure and n, the config's bootstrap and models.tsv's cut-off."""
    shutil.copytree(dot_test_run / "config", tmp_path / "config")
    config = (tmp_path / "config/config.yaml").read_text()
    block = "    timeline: {by: statement_date, edges: [20100101, 20110101, 20120101, 20130101], bins: 3, "
    block += "measure: k_avg, strategy: random, n: 3, min_facts: 1}\n"
    config = config.replace("    n_facts: 6\n", "    n_facts: 6\n" + block)
    (tmp_path / "config/config.yaml").write_text(config + "report:\n  bootstrap_samples: 50\n")
    folder = tmp_path / SUITE
    folder.mkdir(parents=True)
    labels = ["20110101", "20120101", "20130101", "static"]
    starts = {"20110101": 20100101, "20120101": 20110101, "20130101": 20120101}
    # The .test suite's facts dealt round the slices.
    facts = contracts.read("facts", dot_test_run / SUITE / "facts.parquet")
    facts["slice"] = [labels[i % 4] for i in range(len(facts))]
    facts["slice_start"] = facts["slice"].map(starts)
    facts["slice_end"] = pd.to_numeric(facts["slice"], errors="coerce")
    facts.to_parquet(folder / "facts.parquet")
    value = {"20110101": 1.0, "20120101": 1.0, "20130101": 0.0, "static": 1.0}
    per_fact = pd.DataFrame(
        {
            "fact_id": facts["fact_id"],
            "measure": "k_avg",
            "strategy": "random",
            "n": 3,
            "value": facts["slice"].map(value),
        }
    )
    result = api.timeline({"control": per_fact}, folder)
    curves = result.curves.set_index("slice")
    assert list(curves.index) == labels
    assert curves["value"].tolist() == [1.0, 1.0, 0.0, 1.0]
    first = curves.iloc[0]
    assert (first["cutoff_status"], first["cutoff_index"], first["cutoff"]) == ("within", 2, "20120101")
    assert (first["measure"], first["n"], first["declared_cutoff"]) == ("k_avg", 3, "20160101")
    assert not curves["after_declared"].any()  # every slice ends before 2016-01-01
    # No fact after the declared cut-off: one row saying so, without a value.
    after = result.after_cutoff.to_dict("records")
    assert len(after) == 1 and (after[0]["declared_cutoff"], after[0]["n_facts"]) == ("20160101", 0)
    assert math.isnan(after[0]["value"])
    # The profile as rule timeline writes it: the same change point, a one-slice drop (sharp).
    profile = result.profile.set_index("model").loc["control"]
    assert (profile["cutoff"], profile["shape"], profile["curve"]) == ("20120101", "sharp", "all")
