"""A test-only distractor strategy, measure family and model backend, registered from outside the
library through ``FACTPROBE_PLUGINS``: tests/test_registries.py runs them
through the workflow with no other file touched.

* strategy ``toy_same_relation``: the other objects of the suite's facts of the same relation,
  in entity-id order, that Ω(f) allows (not o, not a valid object of (s, r), same type rules),
  after the first ``skip`` of them: a setting of its own
  (``distractors.strategy_settings.toy_same_relation.skip``);
* source format ``toy_triples``: the ``triples`` format under another name, a new format being
  one function and one decorator;
* family ``toy`` with measure ``toy_object_logpl``: the mean over a fact's prompts of the object's
  log Pl(o | c), times a setting of its own (``metrics.family_settings.toy.scale``, default 1);
* backend ``toy``: a model without weights whose log-probabilities are a fixed hash of the text,
  so its scores are reproducible and differ from entity to entity.

Only the standard library is imported at the top: the Snakefile imports this while parsing.
"""

from __future__ import annotations

import hashlib

from factprobe.lm.api import LM, GenerateResult, LoglikResult, TopkResult
from factprobe.measures import register_measure
from factprobe.registries import Setting, backend, family, source_format, strategy


def _hash_unit(text: str) -> float:
    """A number in [0, 1) fixed by ``text``."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") / 2**64


@strategy(
    "toy_same_relation", settings={"skip": Setting(0, "allowed objects passed over before the first kept")}
)
def same_relation(ctx, i, fact_id, fact):
    """Objects of the suite's other facts of relation r that Ω(f) allows, by entity id, after
    the first ``skip``."""
    from factprobe.contracts import id_ints
    from factprobe.distractors.retrieve import rows

    s, r, o = fact
    facts = ctx.facts
    mine = facts[id_ints(facts["property"]) == r]
    objects = sorted(set(id_ints(mine["object"]).tolist()) - {o})
    allowed = list(ctx.omega.filter(s, r, o, objects))
    skip = ctx.settings.strategy_settings["toy_same_relation"]["skip"]
    return rows(fact_id, allowed[skip : skip + ctx.settings.n], "toy_same_relation", side="object")


@source_format("toy_triples", listed=True)
def toy_triples(name, suite, sets, paths, forms_path, memory_mb=None):
    """The facts listed in ``source.path``, as format ``triples`` reads them."""
    from factprobe.probes.listed import triples_suite

    return triples_suite(name, suite, sets, paths, forms_path, memory_mb)


@family("toy", settings={"scale": Setting(1.0, "factor on the log-probabilities the measure averages")})
def toy_family(frame):
    """Mean log Pl(o | c) of each fact's object over its prompts, times its setting ``scale``."""
    scale = frame.settings.own("toy")["scale"]
    from factprobe.metrics.common import GROUP_KEYS, average_per_fact

    objects = frame.candidates[frame.candidates["role"] == "object"][["fact_id", "entity"]].drop_duplicates()
    per_prompt = (
        frame.prompts[["prompt_id", "fact_id", *GROUP_KEYS]]
        .merge(objects, on="fact_id")
        .merge(frame.entity_scores[["prompt_id", "entity", "logpl"]], on=["prompt_id", "entity"])
        .rename(columns={"logpl": "toy_object_logpl"})
    )
    per_prompt["toy_object_logpl"] *= scale
    return [average_per_fact(per_prompt, [], ["toy_object_logpl"])], []


register_measure(
    "toy_object_logpl",
    "toy",
    "test only",
    "toy log Pl(o|c)",
    unit="nats",
    higher_is_better=True,
    headline=True,
    fact_level=True,
    bounded=False,
)


@backend("toy")
class ToyLM(LM):
    """Log-probabilities from a hash of (model name, context, continuation): no weights."""

    def __init__(self, name: str, end_marker: str = "eos"):
        self.name, self.end_marker = name, end_marker

    @classmethod
    def from_row(cls, row, model_dir=None, **settings):
        name = row["name"] if isinstance(row, dict) else row.name
        return cls(str(name), settings.get("end_marker", "eos"))

    @property
    def identity(self):
        return (f"toy:{self.name}", "1", "none")

    def loglikelihood(self, requests, progress=False, on_done=None):
        out = []
        for req in requests:
            words = max(1, len(req.continuation.split()))
            first = -1.0 - 4.0 * _hash_unit(f"{self.name}|{req.context}|{req.continuation}")
            out.append(LoglikResult(first - 0.5 * (words - 1), words, first, 0.0))
        if on_done is not None:
            on_done(list(range(len(out))), out)
        return out

    def topk(self, requests):
        return [
            TopkResult(
                tuple(range(req.k)),
                tuple(f"t{i}" for i in range(req.k)),
                tuple(-1.0 - i for i in range(req.k)),
            )
            for req in requests
        ]

    def generate(self, requests, progress=False):
        return [[GenerateResult("", 0.0)] * max(1, req.samples) for req in requests]
