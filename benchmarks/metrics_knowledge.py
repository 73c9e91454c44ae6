"""Vectorised K(f|c) (factprobe.metrics.knowledge.knowledge_per_prompt) against a naive per-prompt
loop over ``k_of_prompt``, on a synthetic score table. Prints times and the speed-up ratio, and
checks that both give the same values."""

import math
import time

import numpy as np
import pandas as pd
from factprobe import contracts
from factprobe.metrics.common import correct_entities, entity_scores, prompt_frame
from factprobe.metrics.knowledge import k_of_prompt, knowledge_per_prompt


def synthetic(n_facts=400, prompts_per_fact=3, n_dis=50, forms=2, seed=0):
    rng = np.random.default_rng(seed)
    facts = pd.DataFrame({"fact_id": [f"S{i}|P|O{i}" for i in range(n_facts)]})
    facts["subject"] = [f"S{i}" for i in range(n_facts)]
    facts["property"] = "P"
    facts["object"] = [f"O{i}" for i in range(n_facts)]
    facts["objects"] = [[o] for o in facts["object"]]
    cands = pd.DataFrame(
        [(f, f"X{d}", "distractor", "random", d + 1) for f in facts["fact_id"] for d in range(n_dis)]
        + [(f, o, "object", "object", 0) for f, o in zip(facts["fact_id"], facts["object"], strict=True)],
        columns=["fact_id", "entity", "role", "strategy", "rank"],
    )
    prompts = pd.DataFrame(
        [(f"{f}|{c}", f) for f in facts["fact_id"] for c in range(prompts_per_fact)],
        columns=["prompt_id", "fact_id"],
    )
    rows = prompts.merge(cands[["fact_id", "entity"]], on="fact_id")
    rows = rows.loc[rows.index.repeat(forms)].reset_index(drop=True)
    rows["form"] = rows["entity"] + "_" + (rows.groupby(["prompt_id", "entity"]).cumcount()).astype(str)
    rows["logprob"] = -rng.gamma(2.0, 2.0, len(rows))
    rows["n_tokens"] = 2
    rows["first_logprob"] = rows["logprob"] / 2
    # Every contract column present (the ones not made here empty), as the pipeline's tables are.
    prompts = prompts.reindex(columns=contracts.columns("prompts"))
    cands = cands.reindex(columns=contracts.columns("candidates"))
    scores = rows.drop(columns="fact_id").reindex(columns=contracts.columns("scores"))
    return facts, prompt_frame(prompts), cands, scores


def naive(ent, prompts, cands, facts, ns):
    lp = {(p, e): v for p, e, v in zip(ent["prompt_id"], ent["entity"], ent["logpl"], strict=True)}
    obj = dict(zip(facts["fact_id"], facts["object"], strict=True))
    dis = (
        cands[cands["role"] == "distractor"]
        .sort_values("rank")
        .groupby("fact_id")["entity"]
        .apply(list)
        .to_dict()
    )
    out = {}
    for pid, fid in zip(prompts["prompt_id"], prompts["fact_id"], strict=True):
        dl = [lp[(pid, d)] for d in dis.get(fid, [])]
        for n in ns:
            out[(pid, n)] = (
                k_of_prompt(lp[(pid, obj[fid])], dl, n, "min"),
                k_of_prompt(lp[(pid, obj[fid])], dl, n, "avg"),
            )
    return out


def main():
    facts, prompts, cands, scores = synthetic()
    ns = [1, 2, 5, 10, 20, 50]
    ent = entity_scores(scores)
    correct = correct_entities(facts)
    t0 = time.perf_counter()
    fast = knowledge_per_prompt(ent, prompts, cands, facts, correct, ns)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = naive(ent, prompts, cands, facts, ns)
    t_slow = time.perf_counter() - t0
    for row in fast.itertuples():
        want = slow[(row.prompt_id, row.n)]
        # K at n is undefined (NaN) with fewer than n distractors, in both implementations.
        same = [
            (math.isnan(a) and math.isnan(b)) or math.isclose(a, b)
            for a, b in zip((row.k_min, row.k_avg), want, strict=True)
        ]
        assert all(same), (row, want)
    print(f"{len(scores)} score rows, {len(prompts)} prompts, {len(ns)} n values")
    print(f"vectorised: {t_fast:.3f} s   naive loop: {t_slow:.3f} s   speed-up: {t_slow / t_fast:.1f}x")


if __name__ == "__main__":
    main()
