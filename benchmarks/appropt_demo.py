"""ApprOpt on the demo's knowledge suite: how many cloze sentences get fewer than n distractors.

Reads the demo's tables (``results/``, after ``make demo``: the suite's facts, entity forms and
prompts, the dumps' types and claims) and the model folder, runs
:func:`factprobe.distractors.appropt.appropt_distractors` with the suite's ApprOpt settings
(config/config.yaml) and prints the sentences, the distractors and the sentences with fewer than
n; the library's log line splits those by cause (pool with fewer than n labels, or other).

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/appropt_demo.py \\
        [--results results] [--model resources/models/smollm2] [--name smollm2]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import torch
import yaml
from factprobe import config_rules, contracts, scan
from factprobe.config_check import load_run
from factprobe.distractors.appropt import appropt_distractors
from factprobe.distractors.retrieve import load_suite_omega
from factprobe.lm import load_model
from factprobe.plumbing import run_settings as R
from factprobe.settings import Appropt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--model", type=Path, default=Path("resources/models/smollm2"))
    parser.add_argument("--name", default="smollm2")
    parser.add_argument("--suite", default="knowledge")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
    torch.set_num_threads(1)
    root = Path.cwd()
    config = yaml.safe_load((root / "config/config.yaml").read_text())
    cfg, dumps, models = load_run(config, root, root / "workflow/schemas", "config/config.yaml")
    run = R.resolve(cfg, {r["dump"]: r for r in dumps}, {r["name"]: r for r in models})
    settings = run.appropt[args.suite][args.name]
    block = cfg.suites[args.suite]
    probes = args.results / "probes" / args.suite
    inputs = argparse.Namespace(
        facts=str(probes / "facts.parquet"),
        entity_forms=str(probes / "entity_forms.parquet"),
        types=[str(args.results / "wikidata" / d / "types.parquet") for d in config_rules.suite_dumps(block)],
        claims=str(args.results / "wikidata" / block.dump / "claims.parquet"),
    )
    facts, forms_table, _claims, omega = load_suite_omega(inputs, settings)
    prompts = contracts.read("prompts", str(probes / "prompts.parquet"))
    lm = load_model(
        settings["model"],
        str(args.model),
        end_marker=run.end_markers[args.suite],
        no_space_langs=cfg.scoring.no_space_languages,
    )
    start = time.time()
    out = appropt_distractors(
        lm,
        facts,
        prompts,
        scan.forms_frame(forms_table),
        omega,
        Appropt(**{k: settings[k] for k in ("n", "width", "lang", "styles", "max_candidates")}),
    )
    lists = out.drop_duplicates("prompt_id")
    n = settings["n"]
    print(
        f"sentences with a list {len(lists)}, distractors {len(out)}, "
        f"lists with fewer than n={n}: {int((lists['found'] < n).sum())}, {time.time() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
