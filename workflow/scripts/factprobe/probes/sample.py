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
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from factprobe.contracts import id_ints
from factprobe.hashing import stable_hashes

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
    """``relation_strata``: :func:`factprobe.probes.select.sample_facts` relation by relation.

    A relation's candidates come in parts; each part goes to a temporary
    Parquet file with its sample hash, and :meth:`finish` lets DuckDB (which spills) bin and draw
    every relation by the rule of ``sample_facts``: equal-count strata over (popularity, fact_id),
    ``n_facts // strata`` per stratum (one more in the top ``n_facts % strata``), the lowest
    ``stable_hash(seed, "sample", fact_id)`` first. The job holds the sample, not the candidates.
    """

    def __init__(self, n_facts: int | None, strata: int, seed: object, con=None):
        self.n_facts, self.strata, self.seed, self.con = n_facts, strata, seed, con
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-strata-")
        self.files: dict[str, list[str]] = {}
        self._n = 0  # parts reserved

    def reserve(self) -> str:
        """A fresh path for one part's spill (:func:`spill_strata`; in the job's process)."""
        self._n += 1
        return str(Path(self.tmp.name) / f"{self._n}.parquet")

    def spiller(self) -> partial:
        """The per-part work of :meth:`add` as a picklable function ``(candidates,
        object_sitelinks, path) -> rows`` that a forked worker can run (:mod:`factprobe.parallel`)."""
        return partial(spill_strata, seed=self.seed)

    def register(self, prop: str, path: str, rows: int) -> None:
        """Take one spilled part of relation ``prop`` (:func:`spill_strata`'s ``rows``; 0: none)."""
        if rows:
            self.files.setdefault(prop, []).append(path)

    def add(self, candidates: pd.DataFrame, object_sitelinks: pd.Series | None = None) -> None:
        """Spill one part of a relation's candidates (``object_sitelinks`` is not needed here)."""
        if candidates.empty:
            return
        path = self.reserve()
        self.register(
            str(candidates["property"].iat[0]), path, spill_strata(candidates, None, path, self.seed)
        )

    def finish(self) -> list[pd.DataFrame]:
        from factprobe import scan

        con = self.con if self.con is not None else scan.connect()
        try:
            return [self._draw(con, files) for files in self.files.values()]
        finally:
            self.tmp.cleanup()

    def _draw(self, con, files: list[str]) -> pd.DataFrame:
        from factprobe import scan

        strata, n = self.strata, self.n_facts
        keep = ""
        if n is not None:
            quota = f"{n // strata} + CASE WHEN stratum >= {strata - n % strata} THEN 1 ELSE 0 END"
            keep = f"QUALIFY row_number() OVER (PARTITION BY stratum ORDER BY _h) <= {quota}"
        paths = ", ".join(scan.quote(f) for f in files)
        table = con.sql(
            f"""
            SELECT * EXCLUDE (_h, _rank, _n) FROM (
                SELECT *, (_rank * {strata}) // _n AS stratum FROM (
                    SELECT *, row_number() OVER (ORDER BY popularity, fact_id) - 1 AS _rank,
                           count(*) OVER () AS _n
                    FROM read_parquet([{paths}])
                )
            ) {keep} ORDER BY stratum, _h
            """
        ).to_arrow_table()
        return table.to_pandas()


class PopularityBins:
    """``popularity_bins``: one sample over every relation's candidates (module docstring).

    Candidates come a part of a relation at a time: each part is written to a
    temporary Parquet file, its popularity and uniform draw to a NumPy file beside it, and only
    the range of popularity is kept. A part's objects' sitelinks come with it (:meth:`add`), from
    the query that streams the relation, so the work per part does not grow with the dump.
    :meth:`finish` reads the parts back one at a time, twice: to count the equal-width bins, then
    to keep the ``n`` largest Efraimidis–Spirakis keys so far (:func:`weighted_sample`'s order:
    key, then position); it reads the drawn rows back. The job holds one part and the sample, not
    16 bytes per candidate.
    """

    def __init__(self, n_facts: int | None, bins: int, seed: object, entities_path: str, con=None):
        self.n_facts, self.bins, self.seed = n_facts, bins, seed
        self.entities_path, self.con = entities_path, con
        self.tmp = tempfile.TemporaryDirectory(prefix="factprobe-sample-")
        self.sizes: list[int] = []
        self.stems: list[str] = []
        self._n = 0  # parts reserved
        self.lo, self.hi = np.inf, -np.inf

    def _path(self, i: int, ext: str) -> Path:
        return Path(f"{self.stems[i]}.{ext}")

    def reserve(self) -> str:
        """A fresh stem for one part's spill (:func:`spill_bins`; in the job's process)."""
        self._n += 1
        return str(Path(self.tmp.name) / str(self._n))

    def spiller(self) -> partial:
        """The per-part work of :meth:`add` as a picklable function ``(candidates,
        object_sitelinks, stem) -> (rows, lo, hi)`` that a forked worker can run."""
        return partial(spill_bins, seed=self.seed)

    def register(self, prop: str, stem: str, spilled: tuple[int, float, float]) -> None:
        """Take one spilled part (:func:`spill_bins`' result), in the order of the population."""
        rows, lo, hi = spilled
        if rows:
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.stems.append(stem)
        self.sizes.append(rows)

    def add(self, candidates: pd.DataFrame, object_sitelinks: pd.Series | None = None) -> None:
        """Spill one part of candidates. ``object_sitelinks``: sitelinks per integer object id
        (an id left out has none), as :func:`factprobe.probes.fact_candidates.relation_candidate_parts`
        gives them; without it they are read from the entities file, a whole-file scan per call
        that a caller feeding many parts must not pay."""
        if object_sitelinks is None:
            from factprobe import scan

            objects = np.unique(id_ints(candidates["object"]))
            object_sitelinks = scan.sitelinks_of(self.entities_path, objects, self.con)
        stem = self.reserve()
        self.register("", stem, spill_bins(candidates, object_sitelinks, stem, self.seed))

    def finish(self) -> list[pd.DataFrame]:
        try:
            return self._draw()
        finally:
            self.tmp.cleanup()

    def _bins(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Part ``i``'s bins over the whole range (:func:`equal_width_bins`' rule) and uniforms."""
        pop, u = np.load(self._path(i, "npy"))
        whole = np.array([self.lo, self.hi]) if self.hi >= self.lo else np.zeros(0)
        # The bins of the whole range are those of the part with the range's ends added.
        return equal_width_bins(np.concatenate([whole, pop]), self.bins)[len(whole) :], u

    def _draw(self) -> list[pd.DataFrame]:
        total = sum(self.sizes)
        if not total:
            return []
        start = np.cumsum([0, *self.sizes])
        sizes = np.zeros(self.bins, np.int64)
        for i in range(len(self.sizes)):
            sizes += np.bincount(self._bins(i)[0], minlength=self.bins)
        n = total if self.n_facts is None else min(self.n_facts, total)
        best_key, best_pos = np.zeros(0), np.zeros(0, np.int64)
        for i in range(len(self.sizes)):
            bin_of, u = self._bins(i)
            key = np.log(u) / (1.0 / (sizes[bin_of] * np.count_nonzero(sizes)))
            keys = np.concatenate([best_key, key])
            pos = np.concatenate([best_pos, start[i] + np.arange(len(key))])
            keep = np.lexsort((pos, -keys))[:n]
            best_key, best_pos = keys[keep], pos[keep]
        chosen = np.sort(best_pos)
        out = []
        for i in np.unique(np.searchsorted(start, chosen, side="right") - 1):
            rows = chosen[(chosen >= start[i]) & (chosen < start[i + 1])] - start[i]
            frame = pd.read_parquet(self._path(i, "parquet")).iloc[rows]
            out.append(frame.assign(stratum=self._bins(i)[0][rows]).reset_index(drop=True))
        return out


def spill_strata(candidates: pd.DataFrame, object_sitelinks, path: str, seed: object) -> int:
    """:class:`RelationStrata`'s per-part work: the part with its sample hash to ``path``
    (nothing for an empty part). Returns its rows."""
    if candidates.empty:
        return 0
    candidates.assign(_h=stable_hashes((seed, "sample"), candidates["fact_id"])).to_parquet(path, index=False)
    return len(candidates)


def spill_bins(
    candidates: pd.DataFrame, object_sitelinks: pd.Series, stem: str, seed: object
) -> tuple[int, float, float]:
    """:class:`PopularityBins`' per-part work: each candidate's popularity (module docstring)
    and uniform draw to ``stem.npy``, the part to ``stem.parquet``. Returns its rows and its
    range of popularity (``inf, -inf`` when empty)."""
    objects = id_ints(candidates["object"])
    object_links = pd.Series(objects).map(object_sitelinks).fillna(0).to_numpy()
    pop = importance(candidates["popularity"]) + importance(object_links)
    np.save(f"{stem}.npy", np.stack([pop, uniforms(seed, candidates["fact_id"])]))
    candidates.to_parquet(f"{stem}.parquet", index=False)
    if not len(pop):
        return 0, np.inf, -np.inf
    return len(pop), float(pop.min()), float(pop.max())


def sampler_for(suite, seed: object, entities_path: str, con=None) -> RelationStrata | PopularityBins:
    """The sampler ``suites.<s>.sampler`` names (settings ``Suite``: ``sampler``, ``n_facts``, ``strata``)."""
    if suite.sampler == "relation_strata":
        return RelationStrata(suite.n_facts, suite.strata, seed, con)
    if suite.sampler == "popularity_bins":
        return PopularityBins(suite.n_facts, suite.strata, seed, entities_path, con)
    raise ValueError(f"suites.<s>.sampler must be one of {SAMPLERS}, not {suite.sampler!r}")
