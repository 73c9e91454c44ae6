"""Which NDCG convention reproduces PRobELM Table 2's NDCG ≈ MRR (probelm-plausibility §4.2, §5.1)?

The paper does not state its NDCG convention and its repository (zhangdiey/PRobELM) releases data
only. Table 2 shows NDCG within about a point of MRR for every model (Pearson 0.998). This script
takes the released scenario groups (``../shared/data/probelm/data/*.json``: each list of the fact
+ its swaps, grade = 12 - released rank, gaps kept), ranks every list with simulated rankers and
reports accuracy, MRR and both NDCGs of :data:`factprobe.metrics.plausibility.NDCG` (computed by
:func:`factprobe.metrics.ranking.ndcg_per_group`, the measures' own code):

* ``graded``: score = beta x grade + N(0, 1), a ranker that knows the whole order a little;
* ``top``: score = beta x [the fact] + N(0, 1), a ranker that only tells the fact apart.

    PYTHONPATH=workflow/scripts .venv/bin/python benchmarks/probelm_ndcg.py [--data DIR] [--every 4]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from factprobe.metrics.plausibility import NDCG
from factprobe.metrics.ranking import ndcg_per_group

BETAS = {"graded": [0.0, 0.1, 0.2, 0.3, 0.5, 0.8], "top": [0.5, 1.0, 1.5, 2.0]}


def released_lists(folder: Path) -> list[np.ndarray]:
    """Every released group's scenario list as grades: the fact (rank 1) and one scenario per
    other released rank (the subject and object series share the ranks), grade 12 - rank."""
    out = []
    for path in sorted(folder.glob("*.json")):
        for group in json.loads(path.read_text()):
            ranks = sorted({int(x["rank"]) for x in group})
            out.append(np.array([12.0 - r for r in ranks]))
    return out


def simulate(lists: list[np.ndarray], family: str, beta: float, rng: np.random.Generator) -> dict:
    """Accuracy, MRR and each NDCG of one simulated ranker over ``lists``."""
    frames, rr = [], []
    for k, grades in enumerate(lists):
        signal = grades if family == "graded" else (grades == grades.max()).astype(float)
        order = np.argsort(-(beta * signal + rng.normal(size=grades.size)), kind="stable")
        ranked = grades[order]
        rr.append(1.0 / (int(np.flatnonzero(ranked == grades.max())[0]) + 1))
        frames.append(pd.DataFrame({"g": k, "pos": np.arange(1, grades.size + 1), "grade": ranked}))
    rows = pd.concat(frames, ignore_index=True)
    out = {"acc": float(np.mean(np.asarray(rr) == 1.0)), "mrr": float(np.mean(rr))}
    for name, (gain, normalization) in NDCG.items():
        out[name] = float(ndcg_per_group(rows, "g", gain, normalization)["ndcg"].mean())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/probelm/data"))
    parser.add_argument("--every", type=int, default=4, help="use every k-th released list")
    args = parser.parse_args()
    lists = released_lists(args.data)[:: args.every]
    rng = np.random.default_rng(0)
    print(f"{len(lists)} released scenario lists")
    print("ranker  beta   acc    MRR  " + "  ".join(f"{n} (Δ MRR)" for n in NDCG))
    for family, betas in BETAS.items():
        for beta in betas:
            r = simulate(lists, family, beta, rng)
            cells = "  ".join(f"{r[n]:.3f} ({r[n] - r['mrr']:+.3f})" for n in NDCG)
            print(f"{family:7s} {beta:4.1f}  {r['acc']:.3f}  {r['mrr']:.3f}  {cells}")


if __name__ == "__main__":
    main()
