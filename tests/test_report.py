"""The HTML report: rendered by the workflow's own rules from synthetic score tables, then loaded
in headless Chromium, which must show every figure (naturalWidth > 0) and no empty section."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from factprobe.hashing import hash_fraction
from factprobe.io import write_frame
from factprobe.metrics.pipeline import (
    Bootstrap,
    SuiteInputs,
    compute_suite_metrics,
    control_check,
    leaderboard,
    paired_comparisons,
    summarize,
)
from factprobe.report.html import SECTIONS, Figures, build_report
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
                            scores.append((pid, e, f"form {e}", lp, 1 + int(u * 3), lp))
                        gens.append(
                            (pid, 0, f"it is form Q{100 + i}" if split == "taught" else "no idea", -1.0)
                        )
                        gens.append((pid, 1, f"form Q{100 + i}", -1.2))
    scores = pd.DataFrame(scores, columns=["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob"])
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
    return SuiteInputs(
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
        facts=pd.DataFrame(facts, columns=["fact_id", "subject", "property", "object", "objects", "split"]),
        generations=pd.DataFrame(gens, columns=["prompt_id", "sample", "text", "logprob"]),
        forms=pd.DataFrame(
            [(f"Q{e}", "en", f"form Q{e}") for e in range(100, 300)], columns=["entity", "lang", "form"]
        ),
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
    "dumps": dump_records({"20141201": {"path": "resources/demo/w.json.bz2", "checksum": "sha1:abc"}}, ["20141201"]),
    "suites": [{"suite": s, "kind": s, "dump": "20141201", "facts": 12} for s in SUITES],
    "models": model_records(
        {"control": {"source": "builtin:control", "dtype": "float32"}, "other": {"source": "org/other", "revision": "r1"}},
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
    board = leaderboard(summaries, per_fact, boot)
    paired = paired_comparisons(per_fact, boot)
    out = tmp_path_factory.mktemp("report") / "index.html"
    figs = Figures(50)
    settings = Report(dpi=50, bootstrap_samples=200)
    out.write_text(build_report(summaries, board, control, settings, None, PROVENANCE, paired, figs))
    return out, board, paired, per_fact, figs


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
    assert "PLAUSIBILITY" in text and "R@5" in text and "acc_range" in text


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
    """Issue 16 item 7: synthetic suites have 3 random, 3 sem (the same entities in the same order)
    and 1 temp distractor per fact, the first of them (no derived Temp+Sem list: retrieval writes
    temp+sem itself, metrics.combined_strategies is empty by default)."""
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


PROBE = """<script>
window.addEventListener('load', function () {
  var out = [];
  document.querySelectorAll('img').forEach(function (img, i) {
    out.push(i + ':' + (img.complete && img.naturalWidth > 0 ? 'ok' : 'broken'));
  });
  document.querySelectorAll('section').forEach(function (s) {
    var filled = s.querySelectorAll('img,table').length + (s.querySelector('p.note') ? 1 : 0);
    out.push(s.id + ':' + (filled > 0 && s.innerText.trim().length > s.querySelector('h2').innerText.length ? 'filled' : 'empty'));
  });
  var pre = document.createElement('pre');
  pre.id = 'probe-result';
  pre.textContent = out.join(' ');
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed (.ci/run installs it)")
def test_chromium_loads_every_figure(page, tmp_path):
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
    sections = [s for s in states if not s.split(":")[0].isdigit()]
    assert sorted(s.split(":")[0] for s in sections) == sorted(k for k, _ in SECTIONS)
    assert all(s.endswith(":filled") for s in sections), states


# --------------------------------------------------------------------------- the rules themselves


@pytest.fixture(scope="module")
def workflow_run(tmp_path_factory):
    """Rules compute_metrics -> summarize_metrics -> leaderboard -> render_report run by Snakemake on
    synthetic upstream tables written at the contract paths for every configured suite and model."""
    import yaml

    work = tmp_path_factory.mktemp("wf")
    for name in ("Snakefile", "workflow", "config", "profiles", "environment.yml", "pyproject.toml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, work / name)
    (work / "resources").symlink_to(ROOT / "resources")
    (work / "tests").symlink_to(ROOT / "tests")
    config = yaml.safe_load((work / "config/config.yaml").read_text())
    models = [
        line.split("\t")[0] for line in (work / "config/models.tsv").read_text().splitlines()[1:] if line
    ]
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
            write_frame(tables.candidates, probes / "appropt" / f"{model}.parquet")
            write_frame(tables.forms, probes / "appropt" / f"{model}.forms.parquet")
        write_frame(tables.prompts, probes / "prompts.parquet")
        write_frame(tables.facts, probes / "facts.parquet")
        write_frame(tables.candidates, probes / "candidates.parquet")
        write_frame(tables.forms, probes / "forms.parquet")
        write_frame(tables.prompts.iloc[:0], probes / "translated_prompts.parquet")
        write_frame(tables.forms.iloc[:0], probes / "translated_forms.parquet")
    rules = ["compute_metrics", "control_check", "summarize_metrics", "leaderboard", "render_report"]
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
    page = (work / "results/report/index.html").read_text()
    assert f"taught {verdict.loc['untaught', 'value']:.3f} over 4 facts" in page


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
