"""Benchmark of probe building on a synthetic claims table.

Measures, on ``--rows`` synthetic claims (10 properties, ranks mostly normal, some preferred,
deprecated and ended statements): truthy filtering, candidate facts (labels, N-M objects,
hash-chosen object), stratified sampling, and prompt building with 4-relation contexts.
Baseline, measured in the same run on the same table: the least any truthy view must do, one
pandas ``groupby(subject, property).rank.max()``. Ratios are wall-time ratios to that baseline.

Usage: .venv/bin/python benchmarks/probes.py [--rows 2000000] [--facts 50]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from factprobe.probes.fewshot import DemoPool, context
from factprobe.probes.select import candidate_facts, finish_facts, sample_facts, truthy_claims
from factprobe.probes.templates import Template
from factprobe.probes.verbalize import prompt_text

PROPS = np.array([17, 19, 27, 31, 36, 47, 131, 150, 463, 530], dtype=np.int32)


def synthetic(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_entities = max(rows // 5, 10)
    rank = rng.choice(np.array([0, 1, 2], dtype=np.int8), size=rows, p=[0.01, 0.94, 0.05])
    end = np.where(rng.random(rows) < 0.05, 20100101.0, np.nan)
    return pd.DataFrame(
        {
            "subject": rng.integers(1, n_entities, rows),
            "property": rng.choice(PROPS, rows),
            "object": rng.integers(1, n_entities, rows),
            "rank": rank,
            "start": np.nan,
            "end": end,
            "point_in_time": np.nan,
        }
    )


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--facts", type=int, default=50, help="facts sampled per relation")
    args = parser.parse_args()
    claims = synthetic(args.rows)
    n_entities = int(claims[["subject", "object"]].max().max()) + 1
    labelled = {f"Q{i}" for i in range(1, n_entities) if i % 5}  # 80 % labelled
    sitelinks = pd.Series(np.arange(n_entities) % 300, index=np.arange(n_entities))
    relations = [f"P{p}" for p in PROPS]

    _, t_base = timed(lambda: claims.groupby(["subject", "property"])["rank"].max())
    truthy, t_truthy = timed(lambda: truthy_claims(claims, 20190201))
    cands, t_cand = timed(lambda: candidate_facts(truthy, relations, labelled, sitelinks))
    facts, t_sample = timed(lambda: finish_facts(sample_facts(cands, args.facts, 3), "20190201"))

    templates = {
        ("en", r, "statement"): [
            Template(f"{r}.en.s{i}", r, "en", "statement", f"[X] relation {r} variant {i} [Y].")
            for i in range(5)
        ]
        for r in relations
    }
    labels = {(e, "en"): e.lower() for e in labelled}
    pool = DemoPool(cands[["fact_id", "subject", "property", "object"]], labels, templates)

    def build_prompts():
        rows = 0
        for fact in facts.itertuples(index=False):
            for template in templates[("en", fact.property, "statement")]:
                key = (0, fact.fact_id, template.id, "en", "4-relation")
                demos = pool.draw("relation", 4, template, fact.subject, fact.property, "en", key)
                context("Complete each sentence.", demos, "relation")
                prompt_text(template, fact.subject)
                rows += 1
        return rows

    n_prompts, t_prompts = timed(build_prompts)
    print(
        f"claims {args.rows:,}; truthy {len(truthy):,}; candidate facts {len(cands):,}; sampled {len(facts):,}"
    )
    print(f"baseline groupby-max      {t_base:7.2f} s  ({args.rows / t_base / 1e6:.2f} M claims/s)")
    print(f"truthy_claims             {t_truthy:7.2f} s  ratio {t_truthy / t_base:.2f}")
    print(f"candidate_facts           {t_cand:7.2f} s  ratio {t_cand / t_base:.2f}")
    print(f"sample + split            {t_sample:7.2f} s  ratio {t_sample / t_base:.2f}")
    print(
        f"prompts (4-relation ICL)  {t_prompts:7.2f} s  {n_prompts / t_prompts:,.0f} prompts/s over a pool "
        f"of {len(cands):,}"
    )


if __name__ == "__main__":
    main()
