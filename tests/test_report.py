"""The HTML report: rendered by the workflow's own rules from synthetic score tables, then loaded
in headless Chromium, which must show every figure (naturalWidth > 0) and no empty section."""

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from contract_frames import full, full_inputs
from factprobe import contracts
from factprobe.hashing import hash_fraction
from factprobe.io import write_frame
from factprobe.metrics.pipeline import (
    Bootstrap,
    SuiteInputs,
    compute_suite_metrics,
    control_check,
    headline_table,
    leaderboard,
    paired_comparisons,
    summarize,
)
from factprobe.report.html import SECTIONS, Figures, ReportTables, build_report, models_section
from factprobe.report.provenance import config_hash, dump_records, model_records
from factprobe.settings import Metrics, Report

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def synthetic_suite(kind, model, n_facts=12, langs=("en",), verbs=("template",), styles=("statement",)):
    """Tables of one suite shaped like the contracts; the model 'knows' the taught half."""
    facts, prompts, cands, scores, gens = [], [], [], [], []
    strategies = ["cooccur"] if kind == "plausibility" else ["random", "sem", "temp"]
    for i in range(n_facts):
        fid = f"Q{i}|P36|Q{100 + i}"
        split = "taught" if i % 2 == 0 else "untaught"
        facts.append((fid, f"Q{i}", "P36", f"Q{100 + i}", [f"Q{100 + i}"], split))
        cands.append((fid, f"Q{100 + i}", "object", "object", 0))
        dis = [(s, f"Q{200 + 10 * j + i % 7}") for s in strategies for j in range(3 if s != "temp" else 1)]
        for r, (s, e) in enumerate(dis, start=1):
            cands.append((fid, e, "distractor", s, r))
        for lang in langs:
            for verb in verbs:
                for style in styles:
                    for t in ("t1", "t2"):
                        pid = f"{fid}|{t}|{lang}|{verb}|{style}"
                        prompts.append((pid, fid, t, lang, style, verb, "", f"{fid} {t} {style}"))
                        for e in {f"Q{100 + i}", *[e for _, e in dis]}:
                            u = hash_fraction(model, pid, e)
                            known = e == f"Q{100 + i}" and (split == "taught" or kind == "plausibility")
                            lp = -0.2 - 0.5 * u if known else -1.0 - 3 * u
                            scores.append((pid, e, f"form {e}", lp, 1 + int(u * 3), lp, fid, lang))
                        gens.append(
                            (pid, 0, f"it is form Q{100 + i}" if split == "taught" else "no idea", -1.0)
                        )
                        gens.append((pid, 1, f"form Q{100 + i}", -1.2))
    scores = pd.DataFrame(
        scores,
        columns=["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob", "fact_id", "lang"],
    )
    scores["end_logprob"] = 0.0
    # Next-token table: the model's argmax is the object's name on taught facts (BELIEF §2.1).
    best = scores.sort_values("logprob", ascending=False).drop_duplicates("prompt_id")
    topk = pd.DataFrame(
        {
            "prompt_id": best["prompt_id"],
            "rank": 1,
            "token_id": 0,
            "token": " " + best["form"],
            "logprob": best["logprob"],
        }
    )
    return full_inputs(
        SuiteInputs(
            topk=topk,
            scores=scores,
            prompts=pd.DataFrame(
                prompts,
                columns=[
                    "prompt_id",
                    "fact_id",
                    "template_id",
                    "lang",
                    "style",
                    "verbalization",
                    "shots",
                    "text",
                ],
            ),
            candidates=pd.DataFrame(cands, columns=["fact_id", "entity", "role", "strategy", "rank"]),
            facts=pd.DataFrame(
                facts, columns=["fact_id", "subject", "property", "object", "objects", "split"]
            ),
            generations=pd.DataFrame(gens, columns=["prompt_id", "sample", "text", "logprob"]),
            # Every form a label, in every suite language: correct_set table1 (multilingual) keeps them.
            forms=pd.DataFrame(
                [(f"Q{e}", lang, f"form Q{e}", "label") for e in range(100, 300) for lang in langs],
                columns=["entity", "lang", "form", "source"],
            ),
        )
    )


SUITES = {
    "knowledge": dict(kind="knowledge"),
    "multiprompt": dict(kind="multiprompt"),
    "plausibility": dict(kind="plausibility", styles=("statement", "completion", "question")),
    "multilingual": dict(kind="multilingual", langs=("en", "cs"), verbs=("template", "sentence")),
}
FAMILIES = {
    "knowledge": ["knowledge", "ranking", "belief"],
    "multiprompt": ["belief", "belief_icl", "knowledge"],
    "plausibility": ["plausibility"],
    "multilingual": ["ranking", "knowledge"],
}


PROVENANCE = {
    "version": "9.9.9",
    "config_hash": config_hash({"report": {"dpi": 50}}),
    "dumps": dump_records(
        {"20141201": {"path": "resources/demo/w.json.bz2", "checksum": "sha1:abc"}}, ["20141201"]
    ),
    "suites": [{"suite": s, "kind": s, "dump": "20141201", "facts": 12} for s in SUITES],
    "models": model_records(
        {
            "control": {"source": "builtin:control", "dtype": "float32"},
            "other": {"source": "org/other", "revision": "r1"},
        },
        {},
        {"knowledge": "unused"},
        lambda folder: "f00dfeed",
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """index.html built by the library from two models' synthetic results on all four suite kinds,
    with the leaderboard's bootstrap intervals and the paired comparison (B = 200)."""
    summaries, control, per_fact = {}, {}, {}
    boot = Bootstrap(samples=200, seed=0)
    for suite, spec in SUITES.items():
        kind = spec.pop("kind") if "kind" in spec else suite
        spec = dict(spec)
        parts = []
        per_fact[suite] = {}
        for model in ("control", "other"):
            inputs = synthetic_suite(kind, model, **spec)
            table, suite_table = compute_suite_metrics(
                # Three random distractors: Avg@5 uses them (option; the default leaves K@5 undefined).
                inputs,
                Metrics(families={}, ns=[1, 2, 5], belief_samplings=20, short_lists="available"),
                FAMILIES[kind],
            )
            parts.append(summarize(model, table, suite_table))
            per_fact[suite][model] = table
            if model == "control" and kind == "knowledge":
                control[suite] = control_check(table, bootstrap_samples=200)
        summaries[suite] = pd.concat(parts, ignore_index=True)
    board = leaderboard({s: headline_table(summaries[s], per_fact[s], boot) for s in summaries})
    paired = paired_comparisons(per_fact, boot)
    out = tmp_path_factory.mktemp("report") / "index.html"
    figs = Figures(50)
    settings = Report(dpi=50, bootstrap_samples=200)
    tables = ReportTables(summaries, board, control, paired, PROVENANCE)
    out.write_text(build_report(tables, settings, figs))
    return out, board, paired, per_fact, figs, summaries, control


@pytest.fixture(scope="module")
def page(built):
    return built[0]


def test_every_section_has_content(page):
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained
    for key, _ in SECTIONS:
        body = re.search(rf'<section id="{key}">(.*?)</section>', text, re.S).group(1)
        assert "<img" in body or "<table" in body, key
    assert text.count("<img") >= 8
    assert "PLAUSIBILITY" in text and "R@3 en" in text and "acc_range" in text


def test_ranking_table_has_the_fluent_mlama_table1_layout(page, built):
    """fluent-mLAMA Table 1 (§3.3): one row per model x verbalization, R@1 / R@3 / mean rank per
    language; its cells are the summary's recall values of that language and verbalization."""
    text = page.read_text()
    body = re.search(r'<section id="ranking">(.*?)</section>', text, re.S).group(1)
    assert "Table 1 layout (fluent-mLAMA §3.3)" in body
    tables = pd.read_html(io.StringIO(body))
    # one table per distractor strategy, in name order: the first is "random"
    assert "Table 1 layout (fluent-mLAMA §3.3), distractors random" in body
    table = next(t for t in tables if "R@3 cs" in t.columns)
    assert list(table.columns[:2]) == ["model", "verbalization"]
    assert {"R@1 en", "R@1 cs", "R@3 en", "mean rank en", "mean rank cs"} <= set(table.columns)
    assert sorted(table["verbalization"].unique()) == ["sentence", "template"]
    summary = built[5]["multilingual"]
    want = summary[
        (summary["measure"] == "recall")
        & (summary["n"] == 3)
        & (summary["lang"] == "cs")
        & (summary["verbalization"] == "sentence")
        & (summary["model"] == "control")
        & (summary["bin"] == -1)
        & (summary["strategy"] == "random")
    ]["value"].mean()
    got = table[(table["model"] == "control") & (table["verbalization"] == "sentence")]["R@3 cs"].iloc[0]
    assert abs(float(got) - want) < 1e-3


def test_control_panel_reports_the_split(page):
    text = page.read_text()
    found = re.search(
        r"Avg@5 \(random, 3\.0 distractors used on average\): taught ([0-9.]+) \[95% CI ([0-9.]+), ([0-9.]+)\] "
        r"over 6 facts \(target ≥ 0\.90\) .*?pass.*?untaught ([0-9.]+) \[95% CI ([0-9.]+), ([0-9.]+)\] over 6 "
        r"facts \(target 0\.50 ± 0\.15\)",
        text,
    )
    assert found, "control summary line missing"
    taught, t_low, t_high, untaught, u_low, u_high = map(float, found.groups())
    # Taught facts all score 1: every replicate is 1. Untaught: the interval brackets the value.
    assert taught == 1.0 and (t_low, t_high) == (1.0, 1.0)
    assert untaught < 0.9 and u_low < untaught < u_high


def test_report_names_n_used_chance_and_coinciding_strategies(page):
    """Synthetic suites have 3 random, 3 sem (the same entities in the same order)
    and 1 temp distractor per fact, the first of them (no derived Temp+Sem list: retrieval writes
    temp+sem itself, metrics.family_settings.knowledge.combined_strategies is empty by default)."""
    text = page.read_text()
    assert "Strategies with identical values at every n: sem = random." in text
    # K at n = 5 with temp's single distractor is labelled with what was used, and its chance
    # (Min@5 with 1 distractor: 1/2) is shown next to it; random's Min@5 chance is 1/(3+1).
    models = re.search(r'<section id="models">(.*?)</section>', text, re.S).group(1)
    assert "chance (random ranker)" in models
    row = re.search(r"<td>k_min temp @5 \(1\.0 distractors used\)</td>(.*?)</tr>", models, re.S)
    assert row and row.group(1).strip().endswith("<td>0.500</td>"), row
    row = re.search(r"<td>k_min random @5 \(3\.0 distractors used\)</td>(.*?)</tr>", models, re.S)
    assert row and row.group(1).strip().endswith("<td>0.250</td>"), row
    assert "k_min sem @5 (3.0 distractors used) (= random)" in models


def section(text, key):
    return re.search(rf'<section id="{key}">(.*?)</section>', text, re.S).group(1)


def test_provenance_block_opens_the_page(page):
    """Dumps and dates, suites with fact counts, models with revision and
    fingerprint, factprobe version and config hash, before every other section."""
    text = page.read_text()
    assert text.index('<section id="provenance">') < text.index('<section id="models">')
    block = section(text, "provenance")
    assert "factprobe <b>9.9.9</b>" in block and config_hash({"report": {"dpi": 50}}) in block
    assert re.search(
        r"<td>20141201</td>\s*<td>2014-12-01</td>\s*<td>resources/demo/w.json.bz2</td>\s*<td>sha1:abc</td>",
        block,
    )
    assert re.search(
        r"<td>plausibility</td>\s*<td>plausibility</td>\s*<td>20141201</td>\s*<td>12</td>", block
    )
    assert "<td>org/other</td>" in block and "<td>r1</td>" in block
    assert "knowledge: f00dfeed" in block  # the control model's content fingerprint per suite
    assert "B = 200 replicates, seed 0" in block


def test_models_table_shows_leaderboard_intervals(built):
    """Every fact-level headline cell is "value [ci_low, ci_high]" with the leaderboard's numbers,
    and the leaderboard value is the bootstrap's point value (same pooling over prompt groups)."""
    page, board, _, per_fact, *_ = built
    from factprobe.metrics.uncertainty import interval_table

    text = section(page.read_text(), "models")
    rows = board[board["measure"].isin(["k_avg", "k_min", "recall", "mean_rank", "probability"])]
    assert rows["ci_low"].notna().all() and (rows["ci_low"] <= rows["value"] + 1e-12).all()
    assert (rows["value"] <= rows["ci_high"] + 1e-12).all() and (rows["n_facts"] == 12).all()
    assert board.loc[board["measure"] == "belief_ovconf", "ci_low"].isna().all()  # suite-level
    # PLAUSIBILITY is recomputed from its per-fact parts in every replicate: its point value is
    # the leaderboard's (mean over prompt groups of the mean over style x {Acc, MRR, NDCG}).
    plaus = board[board["measure"] == "plausibility"]
    assert len(plaus) == 2 and plaus["ci_low"].notna().all() and (plaus["n_facts"] == 12).all()
    from factprobe.metrics.pipeline import Bootstrap as B
    from factprobe.metrics.pipeline import _suite_intervals

    again = _suite_intervals(per_fact["plausibility"]["other"], B(200, 0)).set_index("measure")
    assert again.loc["plausibility", "value"] == pytest.approx(
        plaus.set_index("model").loc["other", "value"], abs=1e-12
    )
    own = interval_table(
        per_fact["knowledge"]["other"], ["k_avg"], ["lang", "verbalization", "style", "shots"], 200, 0
    )
    mine = board[
        (board["suite"] == "knowledge") & (board["model"] == "other") & (board["measure"] == "k_avg")
    ]
    merged = own.merge(mine, on=["strategy", "n"], suffixes=("", "_board"))
    assert len(merged) == len(own) > 0
    assert (abs(merged["value"] - merged["value_board"]) < 1e-12).all()
    row = mine[(mine["strategy"] == "random") & (mine["n"] == 5)].iloc[0]
    cell = f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    found = re.search(r"<td>k_avg random @5 \(3\.0 distractors used\)</td>(.*?)</tr>", text, re.S)
    assert found and f"<td>{cell}</td>" in found.group(1), (cell, found and found.group(1))
    assert "95% percentile bootstrap interval], resampling facts (not prompts)" in text


def test_paired_comparison_shown_for_two_models(built):
    page, _, paired, *_ = built
    text = section(page.read_text(), "models")
    assert "<h3>Paired comparison</h3>" in text and "control − other" in text
    assert set(paired["model_a"]) == {"control"} and set(paired["model_b"]) == {"other"}
    assert (
        (paired["ci_low"] <= paired["diff"] + 1e-12) & (paired["diff"] <= paired["ci_high"] + 1e-12)
    ).all()
    assert (paired["value_a"] - paired["value_b"] - paired["diff"]).abs().max() < 1e-12
    assert ((paired["p_value"] > 0) & (paired["p_value"] <= 1)).all()
    # Identical K per fact on the plausibility suite would give p = 1; here every reading is stated.
    assert "CI includes 0" in text or "CI excludes 0" in text


def test_small_values_keep_significant_digits(page):
    from factprobe.report.figures import fmt

    assert [fmt(0.000123456), fmt(1.2e-7), fmt(0.5), fmt(0.0), fmt(12.3456), fmt(float("nan"))] == [
        "0.000123",
        "1.2e-07",
        "0.500",
        "0",
        "12.346",
        "–",
    ]
    text = page.read_text()
    assert ">0.000<" not in text and "[0.000," not in text and " 0.000]" not in text


def test_a_verdict_on_two_facts_looks_uncertain():
    """Two taught facts at 1.0 and 0.8: mean 0.9 reaches the target, but the bootstrap interval
    [0.8, 1.0] crosses it, so the page marks the pass uncertain ('a verdict on 2 facts')."""
    from factprobe.report.html import control_section

    rows = []
    for fid, split, k in (
        ("Q1", "taught", 1.0),
        ("Q2", "taught", 0.8),
        ("Q3", "untaught", 0.5),
        ("Q4", "untaught", 0.5),
    ):
        for measure, value in (
            ("k_avg", k),
            ("k_min", k),
            ("n_used", 3.0),
            ("k_avg_chance", 0.5),
            ("k_min_chance", 0.25),
        ):
            rows.append((fid, measure, value, "random", 5, split))
    per_fact = pd.DataFrame(rows, columns=["fact_id", "measure", "value", "strategy", "n", "split"])
    check = control_check(per_fact, bootstrap_samples=500)
    verdict = check[check["verdict"] != ""].set_index("split")
    assert verdict.loc["taught", "value"] == pytest.approx(0.9) and verdict.loc["taught", "verdict"] == "pass"
    assert (verdict.loc["taught", "ci_low"], verdict.loc["taught", "ci_high"]) == (0.8, 1.0)
    assert (verdict.loc["untaught", "ci_low"], verdict.loc["untaught", "ci_high"]) == (0.5, 0.5)
    text = control_section({"tiny": check}, Report(dpi=50))
    assert "taught 0.900 [95% CI 0.800, 1.000] over 2 facts (target ≥ 0.90)" in text
    assert text.count("uncertain: the 95% interval over 2 facts crosses the target") == 1


def test_every_chart_names_its_axes_and_facts(built, monkeypatch):
    """Each panel of each figure has an x and a y axis title, and its title (or tick labels) names
    the number of facts; one measure per axis: no y axis is called just 'value'."""
    from factprobe.report import figures

    _, board, paired, _, _, summaries, control = built
    drawn = []

    def keep(fig, dpi=50):
        drawn.append(fig)
        return "data:image/png;base64,"

    monkeypatch.setattr(figures, "to_data_uri", keep)
    build_report(ReportTables(summaries, board, control, paired, PROVENANCE), Report(dpi=50))
    assert len(drawn) == 9  # models, 3 x K vs n, 2 calibration, 2 R@n, control
    for fig in drawn:
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            assert ax.get_xlabel() or ax.get_xticklabels(), ax.get_title()
            assert ax.get_ylabel() or ax.get_shared_y_axes().get_siblings(ax) != [ax], ax.get_title()
            assert ax.get_ylabel().strip().lower() != "value"
            ticks = " ".join(t.get_text() for t in ax.get_xticklabels())
            assert "facts" in ax.get_title() or "facts" in ticks or "suite-level" in ticks, ax.get_title()
            assert "better" in ax.get_title() or "better" in (
                fig._suptitle.get_text() if fig._suptitle else ""
            ), ax.get_title()


PROBE = r"""<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('img').forEach(function (img, i) {
    out.push(i + ':' + (img.complete && img.naturalWidth > 0 ? 'ok' : 'broken'));
  });
  document.querySelectorAll('section').forEach(function (s) {
    var filled = s.querySelectorAll('img,table').length + (s.querySelector('p.note') ? 1 : 0);
    out.push(s.id + ':' + (filled > 0 && s.innerText.trim().length > s.querySelector('h2').innerText.length ? 'filled' : 'empty'));
  });
  var prov = document.querySelector('#provenance');
  out.push('check-provenance-tables:' + prov.querySelectorAll('table').length);
  out.push('check-provenance-text:' + (/factprobe 9\.9\.9, configuration hash [0-9a-f]{12}/.test(prov.innerText) ? 'yes' : 'no'));
  out.push('check-provenance-first:' + (document.querySelector('section').id === 'provenance' ? 'yes' : 'no'));
  var cells = Array.prototype.filter.call(document.querySelectorAll('#models td'), function (td) {
    return /^[-0-9.e]+ \[[-0-9.e]+, [-0-9.e]+\]$/.test(td.innerText.trim());
  });
  out.push('check-interval-cells:' + cells.length);
  out.push('check-control-ci:' + (/\[95% CI [0-9.]+, [0-9.]+\] over \d+ facts/.test(document.querySelector('#control').innerText) ? 'yes' : 'no'));
  var pre = document.createElement('pre');
  pre.id = 'probe-result';
  pre.textContent = out.join(' ');
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed (.ci/run installs it)")
def test_chromium_loads_every_figure(page, tmp_path):
    """In a real browser: every figure decodes, no section is empty, the provenance block comes
    first with its three tables, and the intervals are rendered in the models and control text."""
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probed.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="probe-result">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"probe did not run: {proc.stderr[-2000:]}"
    states = found.group(1).split()
    images = [s for s in states if s.split(":")[0].isdigit()]
    assert len(images) >= 8 and all(s.endswith(":ok") for s in images), states
    checks = dict(s.split(":", 1) for s in states if s.startswith("check-"))
    # Provenance (dumps, suites, models tables; version and hash) is the first section, the models
    # table shows intervals (2 models x fact-level headline rows), the control verdict its interval.
    assert checks["check-provenance-tables"] == "3" and checks["check-provenance-text"] == "yes", checks
    assert checks["check-provenance-first"] == "yes" and checks["check-control-ci"] == "yes", checks
    assert int(checks["check-interval-cells"]) >= 2 * 10, checks
    sections = [s for s in states if not s.split(":")[0].isdigit() and not s.startswith("check-")]
    assert sorted(s.split(":")[0] for s in sections) == sorted(k for k, _ in SECTIONS)
    assert all(s.endswith(":filled") for s in sections), states


# --------------------------------------------------------------------------- the rules themselves


@pytest.fixture(scope="module")
def workflow_run(tmp_path_factory):
    """Rules compute_metrics -> summarize_metrics -> leaderboard -> render_report run by Snakemake on
    synthetic upstream tables written at the contract paths for every configured suite and model."""
    import yaml

    work = tmp_path_factory.mktemp("wf")
    for name in ("workflow", "config", "profiles", "environment.yml", "pyproject.toml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    (work / "resources").symlink_to(ROOT / "resources")
    (work / "tests").symlink_to(ROOT / "tests")
    config = yaml.safe_load((work / "config/config.yaml").read_text())
    models = [
        line.split("\t")[0] for line in (work / "config/models.tsv").read_text().splitlines()[1:] if line
    ]
    # The demo's judged suite (source: triples) takes its human scores from its own file: list the
    # synthetic facts there (written first: older than the probe tables), scores made up.
    judged = config["suites"].get("judged", {}).get("source", {}).get("path")
    if judged:
        rows = "".join(f"Q{i}\tP36\tQ{100 + i}\t{(i * 3 % 8) / 8}\n" for i in range(8))
        (work / judged).write_text("subject\tproperty\tobject\tscore\n" + rows)
    kinds = {
        "multilingual": dict(langs=("en", "cs"), verbs=("template", "sentence")),
        "plausibility": dict(styles=("statement", "completion", "question")),
    }
    for suite, settings in config["suites"].items():
        probes = work / "results/probes" / suite
        for model in models:
            tables = synthetic_suite(settings["kind"], model, n_facts=8, **kinds.get(settings["kind"], {}))
            write_frame(tables.scores, work / f"results/scores/{suite}/{model}.parquet")
            write_frame(tables.topk, work / f"results/scores/{suite}/{model}.topk.parquet")
            write_frame(tables.generations, work / f"results/scores/{suite}/{model}.generations.parquet")
            write_frame(full("appropt", tables.candidates), probes / "appropt" / f"{model}.parquet")
            write_frame(full("forms", tables.forms), probes / "appropt" / f"{model}.forms.parquet")
        # The probe tables as build_probes writes them: every contract column present.
        prompts, forms = full("prompts", tables.prompts), full("forms", tables.forms)
        write_frame(prompts, probes / "prompts.parquet")
        facts = tables.facts
        if settings["kind"] == "plausibility":
            facts = facts.assign(date=pd.array([None] * len(facts), dtype="Int64"), status="new")
        write_frame(full("facts", facts), probes / "facts.parquet")
        write_frame(full("candidates", tables.candidates), probes / "candidates.parquet")
        write_frame(forms, probes / "forms.parquet")
        write_frame(full("translated_prompts", prompts.iloc[:0]), probes / "translated_prompts.parquet")
        write_frame(full("translated_forms", forms.iloc[:0]), probes / "translated_forms.parquet")
        # Sentence-mode suites read their subject swaps (PROBELM Algorithm 1): none here.
        write_frame(full("subject_swaps", prompts.iloc[:0]), probes / "subject_swaps.parquet")
        if settings["kind"] == "plausibility":
            # The diff dates the facts' additions (PROBELM §3.1 per-model cut-off): all undated, new.
            ids = tables.facts["fact_id"].str.extract(r"Q(\d+)\|P(\d+)\|Q(\d+)").astype(int)
            changes = pd.DataFrame({"subject": ids[0], "property": ids[1], "object": ids[2]})
            changes = changes.assign(
                status="new", rule="added", is_replace=False, flag="", single_value=False
            )
            for col in ("start", "end", "point_in_time"):
                changes[col] = pd.array([None] * len(changes), dtype="Int32")
            diff = f"results/diff/{settings['diff_old']}_{settings['dump']}/changes.parquet"
            contracts.write("changes", changes, work / diff)
    # What extraction recorded of each dump (provenance: malformed lines skipped).
    for dump, bad in (("20141201", 0), ("20190201", 2)):
        stats = work / f"results/wikidata/{dump}/extract_stats.json"
        stats.parent.mkdir(parents=True, exist_ok=True)
        record = {"lines": 1000, "entities": 1000 - bad, "malformed": bad}
        record.update(first_malformed_line=7 if bad else None, first_malformed_reason="cut" if bad else None)
        stats.write_text(json.dumps(record))
    # The trained control model folders (fingerprinted in the provenance block), written last so
    # that they are newer than the probe tables train_control reads.
    for suite in config["suites"]:
        folder = work / "results/models/control" / suite
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "suite": suite}))
        write_frame(pd.DataFrame({"fact_id": ["x"], "split": ["taught"]}), folder / "split.parquet")
    rules = ["compute_metrics", "control_check", "summarize_metrics", "leaderboard", "render_report"]
    rules += ["cloze_subsets", "human_alignment"]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--allowed-rules",
        *rules,
        "--",
        "results/report/index.html",
    ]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return work, config, models


def test_human_alignment_table_and_curves_in_report(workflow_run):
    """A triples suite with scores (distractors paper §4.2): the alignment table, the §5.1 curves
    (Fig. 3 over the distractor counts, Fig. 4 over 1..2 cloze sentences) and both figures."""
    work, config, models = workflow_run
    if "judged" not in config["suites"]:
        pytest.skip("no judged suite in the demo config")
    curves = pd.read_csv(work / "results/metrics/judged/human_alignment_curves.csv")
    assert set(curves["model"]) == set(models)
    cloze = curves[(curves["axis"] == "cloze_sentences") & (curves["fold"] == -1)]
    assert sorted(set(cloze["x"])) == [1, 2]
    assert (curves["axis"] == "distractors").any()
    page = (work / "results/report/index.html").read_text()
    assert 'alt="Fig. 3: τ with human judgement vs number of distractors"' in page
    assert 'alt="Fig. 4: τ with human judgement vs number of cloze sentences"' in page


def test_rules_write_contract_outputs(workflow_run):
    work, config, models = workflow_run
    for suite in config["suites"]:
        for model in models:
            table = pd.read_parquet(work / f"results/metrics/{suite}/{model}.parquet")
            assert {"fact_id", "measure", "value", "strategy", "n", "split"} <= set(table.columns)
            assert len(table) > 0
        summary = pd.read_csv(work / f"results/metrics/{suite}/summary.csv")
        assert {"model", "measure", "value"} <= set(summary.columns) and set(summary["model"]) == set(models)
    board = pd.read_csv(work / "results/metrics/leaderboard.csv")
    assert set(board["suite"]) == set(config["suites"])
    page = (work / "results/report/index.html").read_text()
    for key, _ in SECTIONS:
        body = re.search(rf'<section id="{key}">(.*?)</section>', page, re.S).group(1)
        assert "<img" in body or "<table" in body, key


def test_control_check_table_on_workflow_output(workflow_run):
    from factprobe.metrics.pipeline import read_control_check

    work, config, models = workflow_run
    suite = next(s for s, v in config["suites"].items() if v["kind"] == "knowledge")
    if "control" not in models:
        pytest.skip("no control model configured")
    check = read_control_check(work / f"results/metrics/{suite}/control.control_check.csv")
    verdict = check[check["verdict"] != ""].set_index("split")
    assert verdict.loc["taught", "value"] == 1.0 and verdict.loc["taught", "facts"] == 4
    assert verdict.loc["untaught", "value"] < 0.9 and verdict.loc["taught", "verdict"] == "pass"
    assert (
        verdict.loc["taught", "ci_low"] == 1.0
        and verdict.loc["untaught", "ci_low"] < verdict.loc["untaught", "value"]
    )
    page = (work / "results/report/index.html").read_text()
    row = verdict.loc["untaught"]
    assert (
        f"untaught {row['value']:.3f} [95% CI {row['ci_low']:.3f}, {row['ci_high']:.3f}] over 4 facts" in page
    )


def test_workflow_report_provenance_and_intervals(workflow_run):
    """The rule passes the real provenance (demo dumps.tsv rows, fact counts from facts.parquet,
    the control model's fingerprint, version, config hash) and the leaderboard carries intervals."""
    from factprobe.lm.load import model_fingerprint
    from factprobe.report.provenance import factprobe_version

    work, config, models = workflow_run
    page = (work / "results/report/index.html").read_text()
    block = section(page, "provenance")
    assert f"factprobe <b>{factprobe_version(work)}</b>" in block
    assert re.search(r"configuration hash <code>[0-9a-f]{12}</code>", block)
    dumps = {
        line.split("\t")[0]: line.split("\t")
        for line in (work / "config/dumps.tsv").read_text().splitlines()[1:]
    }
    for dump in {v["dump"] for v in config["suites"].values()}:
        assert f"<td>{dump}</td>" in block and f"<td>{dump[:4]}-{dump[4:6]}-{dump[6:]}</td>" in block
        assert f"<td>{dumps[dump][4]}</td>" in block  # its checksum
    # malformed lines skipped per dump (extract_stats.json), dumps named by their registry path
    assert "<th>malformed lines skipped</th>" in block
    assert "<td>2 of 1000 lines (first at line 7)</td>" in block and "<td>0 of 1000 lines</td>" in block
    assert "<td>resources/demo/wikidata-20141201-sample.json.bz2</td>" in block and str(ROOT) not in block
    for suite in config["suites"]:
        n = len(pd.read_parquet(work / f"results/probes/{suite}/facts.parquet"))
        assert re.search(
            rf"<td>{suite}</td>\s*<td>[a-z]+</td>\s*<td>\d+</td>\s*<td>[0-9-]+</td>\s*<td>[^<]*</td>\s*<td>{n}</td>",
            block,
        )
    if "control" in models:
        suite = next(iter(config["suites"]))
        assert f"{suite}: {model_fingerprint(work / 'results/models/control' / suite)}" in block
    board = pd.read_csv(work / "results/metrics/leaderboard.csv")
    k = board[board["measure"] == "k_avg"]
    assert {"ci_low", "ci_high", "n_facts"} <= set(board.columns) and k["ci_low"].notna().all()
    assert ((k["ci_low"] <= k["value"] + 1e-9) & (k["value"] <= k["ci_high"] + 1e-9)).all()
    paired = pd.read_csv(work / "results/metrics/paired.csv")
    assert len(paired) == (0 if len(models) < 2 else len(paired)) and "p_value" in paired.columns
    figures = sorted(p.name for p in (work / "results/report/figures").iterdir())
    assert "models.png" in figures and any(f.startswith("k_versus_n-") for f in figures), figures


def test_snakemake_report_zip(workflow_run):
    work, config, _ = workflow_run
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "1",
        "--report",
        "report.zip",
        "--",
        "results/report/index.html",
    ]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    import zipfile

    archive = zipfile.ZipFile(work / "report.zip")
    names = archive.namelist()
    page = [n for n in names if n.endswith("/index.html")]
    assert len(page) == 1, names
    assert archive.read(page[0]) == (work / "results/report/index.html").read_bytes()
    assert sum(n.endswith("/summary.csv") for n in names) == len(config["suites"])
    assert any(n.endswith("leaderboard.csv") for n in names) and "report/report.html" in names
    # Figures are separate report items; the workflow description is rendered into the report.
    assert any(n.endswith("/models.png") for n in names) and any(n.endswith("paired.csv") for n in names), (
        names
    )
    assert any("k_versus_n-" in n and n.endswith(".png") for n in names), names
    assert b"builds factual-knowledge probing benchmarks" in archive.read("report/report.html")


def test_a_quantized_models_note_is_shown_next_to_its_values(built, tmp_path):
    """Scores of a dequantized 4-bit copy differ from the original release; the manifest's
    note reaches the provenance records and is printed in the models section of that model only."""
    text = (
        "dequantized from m.Q4_1.gguf: a quantized copy, so scores differ slightly from the original release"
    )
    (tmp_path / "manifest.json").write_text(json.dumps({"source": "pypi:p/m.Q4_1.gguf", "note": text}))
    records = model_records(
        {"other": {"source": "pypi:p/m.Q4_1.gguf"}}, {"other": tmp_path / "manifest.json"}, {}
    )
    assert records[0]["note"] == text
    board = built[1]
    html_text = models_section(board, Figures(50, 0.95), None, {"other": text, "absent": "never shown"})
    assert f"other: {text}" in html_text and "never shown" not in html_text
    assert "quantized copy" not in models_section(board, Figures(50, 0.95), None, {})
