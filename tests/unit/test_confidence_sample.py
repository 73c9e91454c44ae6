"""BELIEF-ICL confidence on a sample of prompts (belief-myriadlama §3.2).

§3.2: "We sample 10K prompts from 10K unique subject-relation pairs and only use these 10K prompts
for answer sampling." ``scoring.confidence_prompts`` is that number; null keeps every prompt.
"""

from pathlib import Path

import pandas as pd
import pytest
import yaml
from factprobe.hashing import stable_hash
from factprobe.lm.api import GenerateResult
from factprobe.scoring.generate import confidence_sample, generate_answers

ROOT = Path(__file__).resolve().parents[2]
SEED = "belief-confidence"


def suite_prompts(n_pairs: int = 20, per_pair: int = 5, settings=("zero-shot", "4-random", "4-relation")):
    """``per_pair`` prompts (templates) per pair and context setting, pair i = ``S{i}|P1``."""
    rows = [
        (f"S{i}|P1|O{i}|t{j}|en|0|{shots}", f"S{i}|P1|O{i}", "en", "template", shots, f"S{i} t{j}")
        for i in range(n_pairs)
        for j in range(per_pair)
        for shots in settings
    ]
    return pd.DataFrame(rows, columns=["prompt_id", "fact_id", "lang", "verbalization", "shots", "text"])


def test_one_prompt_from_each_of_n_hash_chosen_pairs_per_setting():
    """7 of 20 pairs, per setting: the 7 with the smallest stable_hash(seed, pair) (worked out here
    independently), one prompt of each, the same pairs in every setting; 21 prompts in all."""
    prompts = suite_prompts()
    chosen = confidence_sample(prompts, 7)
    pairs = sorted((f"S{i}|P1" for i in range(20)), key=lambda p: stable_hash(SEED, p))[:7]
    picked = prompts[prompts["prompt_id"].isin(chosen)]
    assert len(chosen) == 21
    for shots, rows in picked.groupby("shots"):
        assert sorted(rows["fact_id"].str.rsplit("|", n=1).str[0]) == sorted(pairs), shots
        # the prompt of pair t: index stable_hash(seed, t, lang, verbalization, shots) mod |P_t|
        for fact_id, pid in zip(rows["fact_id"], rows["prompt_id"], strict=True):
            pair = fact_id.rsplit("|", 1)[0]
            members = sorted(
                prompts[(prompts["fact_id"] == fact_id) & (prompts["shots"] == shots)]["prompt_id"]
            )
            assert pid == members[stable_hash(SEED, pair, "en", "template", shots) % 5]


def test_sample_is_deterministic_and_independent_of_row_order():
    prompts = suite_prompts()
    chosen = confidence_sample(prompts, 7)
    assert confidence_sample(prompts.sample(frac=1.0, random_state=1), 7) == chosen
    assert confidence_sample(prompts, 7, seed="other") != chosen  # the seed matters
    # More pairs asked than exist: one prompt of every pair per setting; None: every prompt.
    assert len(confidence_sample(prompts, 10_000)) == 20 * 3
    assert confidence_sample(prompts, None) == set(prompts["prompt_id"])


def test_repeated_text_of_an_nm_pair_is_never_the_sampled_prompt():
    """Two facts of pair S|P1 (objects A, B) share their prompt texts; the metrics keep the first
    by prompt id, so the sample must come from those (else its confidence would be dropped)."""
    prompts = pd.DataFrame(
        {
            "prompt_id": ["S|P1|A|t1", "S|P1|A|t2", "S|P1|B|t1", "S|P1|B|t2"],
            "fact_id": ["S|P1|A", "S|P1|A", "S|P1|B", "S|P1|B"],
            "text": ["S is", "S was", "S is", "S was"],
        }
    )
    for seed in ("a", "b", "c", "d", "e", "f"):
        (only,) = confidence_sample(prompts, 1, seed=seed)
        assert only.startswith("S|P1|A|")


class FakeLM:
    """Records requests; answers "x" greedily and "s<k>" per sample."""

    def __init__(self):
        self.requests = []

    def generate(self, requests, progress=False):
        self.requests = list(requests)
        return [
            [GenerateResult("x", -1.0)]
            if r.samples == 0
            else [GenerateResult(f"s{k}", -2.0) for k in range(r.samples)]
            for r in requests
        ]


def test_only_the_sampled_prompts_get_samples():
    prompts = suite_prompts(n_pairs=4, per_pair=2, settings=("zero-shot",))
    chosen = confidence_sample(prompts, 2)
    lm = FakeLM()
    out = generate_answers(lm, prompts, samples=3, max_new_tokens=4, progress=False, sample_ids=chosen)
    assert (out["sample"] == 0).sum() == 8  # every prompt keeps its greedy answer
    sampled = out[out["sample"] > 0]
    assert set(sampled["prompt_id"]) == chosen and len(sampled) == 2 * 3
    assert sum(r.samples > 0 for r in lm.requests) == 2
    # Each sampled prompt keeps its own seed, whatever else is sampled.
    seeds = {r.context: r.seed for r in lm.requests if r.samples}
    text = prompts.set_index("prompt_id")["text"]
    assert seeds == {text[p]: stable_hash("belief-sample", p) % 2**63 for p in chosen}
    every = generate_answers(FakeLM(), prompts, samples=3, max_new_tokens=4, progress=False)
    assert (every["sample"] > 0).sum() == 8 * 3


def test_paper_config_samples_10k_prompts():
    """config/papers/belief.yaml holds §3.2's 100 samples for 10K prompts; the schema accepts it."""
    from factprobe.settings import Scoring

    cfg = yaml.safe_load((ROOT / "config" / "papers" / "belief.yaml").read_text())
    assert cfg["scoring"]["samples"] == 100
    assert cfg["scoring"]["confidence_prompts"] == 10_000
    assert Scoring().confidence_prompts is None  # project default: every prompt
    text = (ROOT / "workflow" / "rules" / "score.smk").read_text()
    assert "confidence_prompts=CFG.scoring.confidence_prompts" in text


@pytest.mark.parametrize("value", [0, -1, "many"])
def test_schema_rejects_bad_values(value):
    import jsonschema

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.scoring.schema.yaml").read_text())
    jsonschema.validate({"confidence_prompts": 5}, schema)
    jsonschema.validate({"confidence_prompts": None}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"confidence_prompts": value}, schema)
