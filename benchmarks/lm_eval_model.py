"""lm-eval model type ``factprobe`` vs lm-eval's HFLM: one exported task, one model, lm-eval's own loop.

The task is a factprobe suite exported for lm-evaluation-harness (:mod:`factprobe.export.harness`):
``--suite results/probes/<suite>`` (a built suite, e.g. after ``make demo``), else the suite the
export tests build from the bundled demo dumps (2 relations x 2 facts, English and German
statement and question templates, zero-shot and 2-random BELIEF-ICL contexts, random and pool
distractors; tests/unit/test_export_lm_eval.py). The model is the demo's SmolLM2-135M-Instruct in
fp32 (``resources/models/smollm2``, prepared into a temporary folder when absent). Both models are
loaded first; then ``simple_evaluate`` runs the task's tag with ``HFLM`` and with
``FactprobeLM``, interleaved, best of ``--repeats``. The script stops unless every choice's
log-likelihood agrees within 1e-4 nats, then prints choices/s of each and the speed ratio.
On busy shared cores prefer ``--threads 1`` (benchmarks/score.py says why); CPU seconds are
printed beside wall seconds.

    .venv/bin/python benchmarks/lm_eval_model.py [--threads 2] [--repeats 2] [--batch-size 32] [--model DIR]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "workflow" / "scripts"), str(ROOT / "benchmarks")]

from factprobe.export.harness import end_text, task_docs, write_task  # noqa: E402
from peer_lm_eval import model_folder  # noqa: E402

EOS = "<|endoftext|>"  # SmolLM2's document end: what factprobe scores after a form
DUMP = "20190201"
SPEC = {
    "kind": "multiprompt",
    "dump": DUMP,
    "languages": ["en", "de"],
    "relations": ["P36", "P530"],
    "n_facts": 2,
    "templates": {"styles": ["statement", "question"], "max_per_relation": 1},
    "few_shot": {"settings": ["zero-shot", "2-random"]},
}


def demo_suite(work: Path):
    """(facts, prompts, candidates, forms) of the export tests' suite, from the bundled dumps."""
    import pyarrow.parquet as pq
    from factprobe.distractors.retrieve import forms_of_candidates, retrieve, suite_omega
    from factprobe.probes.build import DumpTables, build_suite
    from factprobe.settings import Retrieve
    from factprobe.wikidata.reader import extract_dump

    demo = ROOT / "resources" / "demo"
    tables = {}
    for dump in ("20141201", DUMP):
        tables[dump] = work / dump
        extract_dump(demo / f"wikidata-{dump}-sample.json.bz2", tables[dump], ["en", "de", "fr", "ru", "cs"])
    sets = {"team": {"format": "yaml", "path": str(ROOT / "resources" / "templates")}}
    facts, prompts, entity_forms = build_suite(
        "demo",
        SPEC,
        sets,
        DumpTables(
            str(tables[DUMP] / "claims.parquet"),
            str(tables[DUMP] / "entities.parquet"),
            [str(tables[d] / "labels.parquet") for d in sorted(tables)],
        ),
    )
    claims = pq.read_table(tables[DUMP] / "claims.parquet").to_pandas()
    types = [tables[d] / "types.parquet" for d in tables]
    omega = suite_omega(facts, entity_forms, claims, types, DUMP, "non_deprecated", 90.0)
    settings = Retrieve(
        strategies=["random", "pool"],
        n=3,
        pool_size=4,
        search="exact",
        languages=["en", "de"],
        dump=DUMP,
        form_threshold=90.0,
        valid_ranks="non_deprecated",
        ef_search=200,
    )
    candidates = retrieve(facts, omega, settings, {"entity_forms": entity_forms})
    return facts, prompts, candidates, forms_of_candidates(candidates, entity_forms)


def built_suite(folder: Path):
    """(facts, prompts, candidates, forms) of a built suite folder (results/probes/<suite>)."""
    from factprobe.suite_tables import load_suite_tables

    names = ("facts", "prompts", "candidates", "forms")
    tables = load_suite_tables({name: str(folder / f"{name}.parquet") for name in names})
    return tables.facts, tables.prompts, tables.candidates, tables.forms


def choice_logprobs(results: dict) -> dict:
    """{(task, doc id, choice): log-likelihood} of one evaluation's samples."""
    return {
        (task, sample["doc"]["doc_id"], i): float(resp[0])
        for task, samples in results["samples"].items()
        for sample in samples
        for i, resp in enumerate(sample["filtered_resps"])
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, help="a built suite folder (default: the export tests' suite)")
    parser.add_argument("--model", type=Path, help="a prepared SmolLM2 folder (default: the demo's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32, help="HFLM batch size")
    parser.add_argument("--limit", type=int, default=None, help="docs per task (lm-eval --limit)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.disable(logging.WARNING)
    from factprobe.integrations.lm_eval import FactprobeLM
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    work = Path(tempfile.mkdtemp(prefix="lm_eval_model-"))
    suite = built_suite(args.suite) if args.suite else demo_suite(work)
    name = args.suite.name if args.suite else "demo"
    facts, prompts, candidates, forms = suite
    docs = task_docs(name, prompts, candidates, forms, facts, end_text("eos", EOS))
    write_task(docs, work / "tasks" / name, name, "eos", EOS)
    manager = TaskManager(include_path=str(work / "tasks"), include_defaults=False)
    folder = args.model or model_folder()
    models = {
        "HFLM": HFLM(pretrained=str(folder), device="cpu", batch_size=args.batch_size, dtype="float32"),
        "factprobe": FactprobeLM(pretrained=str(folder), device="cpu", dtype="float32"),
    }
    best, values = dict.fromkeys(models, float("inf")), {}
    cpu = dict.fromkeys(models, float("inf"))
    for _ in range(args.repeats):
        for label, lm in models.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            results = simple_evaluate(
                model=lm,
                tasks=[f"factprobe_{name}"],
                task_manager=manager,
                log_samples=True,
                bootstrap_iters=0,
                limit=args.limit,
            )
            best[label] = min(best[label], time.perf_counter() - start)
            cpu[label] = min(cpu[label], time.process_time() - cpu_start)
            values[label] = choice_logprobs(results)
    keys = sorted(values["HFLM"])
    assert keys == sorted(values["factprobe"]), "the two runs scored different choices"
    diff = np.abs(np.array([values["factprobe"][k] - values["HFLM"][k] for k in keys]))
    load = os.getloadavg()[0]
    print(f"model {folder} (fp32), {args.threads} threads, load average {load:.1f} at the end")
    print(f"task factprobe_{name}: {len({k[:2] for k in keys})} docs, {len(keys)} choices")
    print(f"max |factprobe - HFLM| = {diff.max():.2e} nats (mean {diff.mean():.2e})")
    if diff.max() > 1e-4:
        sys.exit("the two disagree by more than 1e-4 nats: no speed is reported for different computations")
    for label in models:
        print(
            f"{label:>9}: {len(keys) / best[label]:7.1f} choices/s "
            f"({best[label]:.1f} s wall, {cpu[label]:.1f} s CPU, simple_evaluate best of {args.repeats})"
        )
    print(
        f"speed ratio factprobe / HFLM (bs {args.batch_size}): {best['HFLM'] / best['factprobe']:.2f}x wall, "
        f"{cpu['HFLM'] / cpu['factprobe']:.2f}x CPU"
    )


if __name__ == "__main__":
    main()
