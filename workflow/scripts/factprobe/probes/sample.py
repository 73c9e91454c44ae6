"""Fact samplers of a probing suite (``suites.<s>.sampler``).

The distractors paper §4.1: "A set S of 1000 facts is sampled with various levels of
popularity"; the data (§4.1) "provides triples with their popularity scores". How, the paper
leaves to its reference implementation (DistFactAssessLM, ``know/data.py``
``sample_balanced_facts`` and ``rep_sample``), whose behaviour ``popularity_bins`` follows:

* popularity of a triple (s, r, o) = importance(s) + importance(o);
* the candidate triples of every relation together are cut into ten equal-width popularity
  bins (``pandas.cut(popularity, bins=10)``: right-closed intervals over [min, max]);
* ``n`` triples are drawn without replacement, each with weight 1 / (size of its bin × number
  of non-empty bins), so every popularity band is equally likely and, inside a band, the mix of
  relations is the population's.

Importance. The reference's ``WikidataPopularity`` gives an entity with an English Wikipedia
article ln(1 + median monthly page views over the 12 months before the dump, from the first
month with views); an entity without one gets the mean importance of its P31 type (the largest
over its types), and a triple whose entity has no importance is dropped. A Wikidata dump carries
no page views; what it carries is each item's number of sitelinks (Wikipedia articles in any
language), the popularity the project already uses. So here importance(e) = ln(1 + sitelinks(e))
(:func:`importance`): the same log scale, a count of articles in place of a count of readers;
an entity without sitelinks has importance 0 (no type fallback). This adaptation is what
``popularity_bins`` means in this project.

``relation_strata`` (the former sampler, :func:`factprobe.probes.select.sample_facts`) is kept:
per relation, facts cut into ``strata`` equal-count bins by subject sitelinks, ``n_facts`` per
relation. For ``popularity_bins``, ``n_facts`` is the size of the whole sample and ``strata`` the
number of bins; a fact's ``stratum`` is its popularity bin (0 = least popular).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.contracts import id_ints
from factprobe.hashing import stable_hashes

from .select import sample_facts

SAMPLERS = ("relation_strata", "popularity_bins")


def importance(sitelinks: np.ndarray | pd.Series) -> np.ndarray:
    """ln(1 + sitelinks): the reference's ln(1 + page views) with sitelinks for page views."""
    return np.log1p(np.asarray(sitelinks, dtype=np.float64))


def equal_width_bins(popularity: np.ndarray, bins: int = 10) -> np.ndarray:
    """Bin 0..bins-1 of each value, as ``pandas.cut(popularity, bins)``: equal-width right-closed
    intervals (a, b] over [min, max], the minimum in bin 0; one bin when every value is equal."""
    pop = np.asarray(popularity, dtype=np.float64)
    if pop.size == 0:
        return np.zeros(0, dtype=np.int64)
    lo, hi = float(pop.min()), float(pop.max())
    if hi == lo:
        return np.zeros(pop.size, dtype=np.int64)
    edges = np.linspace(lo, hi, bins + 1)
    return np.clip(np.searchsorted(edges, pop, side="left") - 1, 0, bins - 1).astype(np.int64)


def bin_weights(bin_of: np.ndarray) -> np.ndarray:
    """Weight of each item: 1 / (size of its bin × number of non-empty bins) (sums to 1)."""
    sizes = np.bincount(bin_of)
    return 1.0 / (sizes[bin_of] * np.count_nonzero(sizes))


def uniforms(seed: object, keys) -> np.ndarray:
    """A uniform in (0, 1) per key from ``stable_hash(seed, "sample", key)``: order-free."""
    h = stable_hashes((seed, "sample"), keys)
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


def weighted_sample(weights: np.ndarray, u: np.ndarray, n: int) -> np.ndarray:
    """Positions of ``n`` items drawn without replacement with probability ∝ ``weights``.

    Efraimidis & Spirakis (2006): keep the ``n`` largest ln(u) / w, the same distribution as
    drawing one item at a time in proportion to the weights left (pandas ``sample(weights=)``,
    the reference's ``rep_sample``). Ties (none in practice) go to the lower position.
    """
    if n >= len(weights):
        return np.arange(len(weights))
    key = np.log(u) / weights
    return np.sort(np.lexsort((np.arange(len(key)), -key))[:n])


class RelationStrata:
    """``relation_strata``: :func:`factprobe.probes.select.sample_facts` relation by relation."""

    def __init__(self, n_facts: int | None, strata: int, seed: object):
        self.n_facts, self.strata, self.seed = n_facts, strata, seed
        self.parts: list[pd.DataFrame] = []

    def add(self, candidates: pd.DataFrame) -> None:
        self.parts.append(sample_facts(candidates, self.n_facts, self.strata, self.seed))

    def finish(self) -> list[pd.DataFrame]:
        return self.parts


class PopularityBins:
    """``popularity_bins``: one sample over every relation's candidates (module docstring).

    Relations come one at a time (a job holds one relation's candidates, issue 15): each is
    written to a temporary Parquet file and only its popularity and uniform draw are kept
    (16 bytes per candidate, about 60 during the draw's sort); :meth:`finish` bins them all,
    draws, and reads the drawn rows back.
    """

    def __init__(self, n_facts: int | None, bins: int, seed: object, entities_path: str, con=None):
        self.n_facts, self.bins, self.seed = n_facts, bins, seed
        self.entities_path, self.con = entities_path, con
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-sample-")
        self.popularity: list[np.ndarray] = []
        self.u: list[np.ndarray] = []

    def add(self, candidates: pd.DataFrame) -> None:
        from factprobe import scan

        objects = id_ints(candidates["object"])
        sitelinks = scan.sitelinks_of(self.entities_path, np.unique(objects), self.con)
        object_links = pd.Series(objects).map(sitelinks).fillna(0).to_numpy()
        self.popularity.append(importance(candidates["popularity"]) + importance(object_links))
        self.u.append(uniforms(self.seed, candidates["fact_id"]))
        candidates.to_parquet(Path(self.tmp.name) / f"{len(self.popularity) - 1}.parquet", index=False)

    def finish(self) -> list[pd.DataFrame]:
        try:
            return self._draw()
        finally:
            self.tmp.cleanup()

    def _draw(self) -> list[pd.DataFrame]:
        if not self.popularity:
            return []
        pop, u = np.concatenate(self.popularity), np.concatenate(self.u)
        part = np.repeat(np.arange(len(self.popularity)), [len(p) for p in self.popularity])
        start = np.cumsum([0] + [len(p) for p in self.popularity])
        bin_of = equal_width_bins(pop, self.bins)
        n = len(pop) if self.n_facts is None else self.n_facts
        chosen = weighted_sample(bin_weights(bin_of), u, n) if len(pop) else np.zeros(0, np.int64)
        out = []
        for i in np.unique(part[chosen]):
            rows = chosen[part[chosen] == i]
            frame = pd.read_parquet(Path(self.tmp.name) / f"{i}.parquet").iloc[rows - start[i]]
            out.append(frame.assign(stratum=bin_of[rows]).reset_index(drop=True))
        return out


def sampler_for(suite, seed: object, entities_path: str, con=None) -> RelationStrata | PopularityBins:
    """The sampler ``suites.<s>.sampler`` names (settings ``Suite``: ``sampler``, ``n_facts``, ``strata``)."""
    if suite.sampler == "relation_strata":
        return RelationStrata(suite.n_facts, suite.strata, seed)
    if suite.sampler == "popularity_bins":
        return PopularityBins(suite.n_facts, suite.strata, seed, entities_path, con)
    raise ValueError(f"suites.<s>.sampler must be one of {SAMPLERS}, not {suite.sampler!r}")
