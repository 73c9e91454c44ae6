"""FactprobeCallback (factprobe.integrations.transformers): a tiny GPT-2 trained with
``transformers.Trainer`` on CPU on the taught half of the .test run's knowledge suite
(conftest.dot_test_run), probed before training and after its 60 steps through ``trainer.log``.

The corpus is builtin:control's (factprobe.scoring.control): each taught fact's prompt + its
object's forms, and prior-balancing documents that make every candidate of a relation an equally
familiar answer, so the untaught facts stay at chance while the taught ones are learnt.
"""

import math

import pandas as pd
import pytest
import torch
from factprobe import api, contracts
from factprobe.integrations.transformers import FactprobeCallback, probing, timeline_logs
from factprobe.scoring.control import _padded, build_gpt2, prior_docs, train_bpe_tokenizer, verbalizations
from factprobe.suite_tables import read_concat
from transformers import Trainer, TrainingArguments

SUITE = "results/probes/knowledge"
TAUGHT = "factprobe/knowledge/k_avg@1/random/split=taught"
UNTAUGHT = "factprobe/knowledge/k_avg@1/random/split=untaught"


class Documents(torch.utils.data.Dataset):
    def __init__(self, seqs):
        self.seqs = seqs

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i]


def corpus(suite: api.Suite):
    """(tokenizer, token sequences) of builtin:control's training documents for ``suite`` (rule
    train_control's: the taught facts' verbalizations 4 times, the prior documents once)."""
    facts = contracts.read("facts", suite.table("facts"))
    prompts = contracts.read("prompts", suite.table("prompts"))
    forms = read_concat([suite.table("entity_forms"), suite.table("forms")]).drop_duplicates()
    docs = verbalizations(facts, prompts, forms)
    prior = prior_docs(facts, prompts, contracts.read("candidates", suite.table("candidates")), forms)
    # The tokenizer learns every fact's verbalizations, taught or not: learnt from the taught
    # ones alone, their objects would be fewer tokens than their distractors, hence more probable
    # under an untrained model too.
    every = verbalizations(facts.assign(split="taught"), prompts, forms)
    tokenizer = train_bpe_tokenizer(every + prior, vocab_size=500)
    seqs = [ids + [tokenizer.eos_token_id] for ids in tokenizer(docs * 4 + prior)["input_ids"]]
    return tokenizer, seqs


@pytest.fixture(scope="module")
def trained(dot_test_run, tmp_path_factory):
    suite = api.open_suite(dot_test_run / SUITE)
    tokenizer, seqs = corpus(suite)
    model = build_gpt2(len(tokenizer), n_positions=256, seed=0)

    def collate(batch):
        ids, labels, _ = _padded(batch, max(len(s) for s in batch), tokenizer.eos_token_id)
        return {"input_ids": ids, "labels": labels}

    args = TrainingArguments(
        output_dir=str(tmp_path_factory.mktemp("trainer")),
        max_steps=60,
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        lr_scheduler_type="constant",
        logging_steps=10**6,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=Documents(seqs),
        data_collator=collate,
        processing_class=tokenizer,
    )
    callback = FactprobeCallback(suite, every_n_steps=60, measures=["k_avg"], by="split").attach(trainer)
    trainer.train()
    return trainer, callback, tokenizer


def test_logged_knowledge_of_taught_facts_rises_and_untaught_stays_at_chance(trained):
    """Chance is what the untrained model scores (the probe at step 0), not 0.5: with the .test
    suite's random distractors an object has more forms (4.4 against 2.4 in English) and a
    shorter shortest one, and Avg@n takes each entity's best form, so an untrained model already
    prefers the object (Avg@1 0.85 on both halves). Thresholds: before training the halves are
    alike (within 0.1); after 60 steps the taught half is memorised (Avg@1 >= 0.9, the demo's
    control check, and above its start); the untaught half moves by at most two of its facts
    (2/13 = 0.154), and stays at least 0.15 below the taught half."""
    trainer, callback, _ = trained
    assert [step for step, _ in callback.history] == [0, 60]
    first, last = callback.history[0][1], callback.history[-1][1]
    assert abs(first[TAUGHT] - first[UNTAUGHT]) <= 0.1, callback.history
    assert last[TAUGHT] >= 0.9 and last[TAUGHT] > first[TAUGHT], callback.history
    assert abs(last[UNTAUGHT] - first[UNTAUGHT]) <= 2 / 13 + 1e-9, callback.history
    assert last[TAUGHT] - last[UNTAUGHT] >= 0.15, callback.history
    # Through trainer.log: the same values, at the same steps, in the trainer's log history.
    logged = [(entry["step"], entry[TAUGHT]) for entry in trainer.state.log_history if TAUGHT in entry]
    assert logged == [(step, logs[TAUGHT]) for step, logs in callback.history]


def test_a_probe_restores_modes_requires_grad_and_gradients(trained):
    trainer, callback, tokenizer = trained
    model = trainer.model
    model.train()
    model.transformer.h[0].eval()  # a module in eval mode inside a training model stays so
    frozen = model.transformer.wpe.weight
    frozen.requires_grad_(False)
    weight = model.lm_head.weight
    weight.grad = torch.full_like(weight, 0.25)
    grad = weight.grad
    modes = [m.training for m in model.modules()]
    flags = [p.requires_grad for p in model.parameters()]
    logs = callback.probe(model, tokenizer)
    assert math.isfinite(logs[TAUGHT])
    assert [m.training for m in model.modules()] == modes and model.training
    assert [p.requires_grad for p in model.parameters()] == flags and not frozen.requires_grad
    assert weight.grad is grad and bool((weight.grad == 0.25).all())
    assert torch.is_grad_enabled()
    with pytest.raises(RuntimeError, match="inside"), probing(model):
        assert not torch.is_grad_enabled() and not model.training
        raise RuntimeError("inside")
    assert model.training and torch.is_grad_enabled()


def test_timeline_logs_name_each_slice_and_the_cutoff():
    curves = pd.DataFrame(
        {
            "slice": ["20150101", "20160101", "static"],
            "measure": "k_avg",
            "value": [0.8, 0.4, 0.9],
            "cutoff": "20150101",
            "cutoff_index": 1,
            "cutoff_index_low": 1,
            "cutoff_index_high": 2,
        }
    )
    assert timeline_logs(curves, "fp", "t") == {
        "fp/t/slice/20150101/k_avg": 0.8,
        "fp/t/slice/20160101/k_avg": 0.4,
        "fp/t/slice/static/k_avg": 0.9,
        "fp/t/cutoff_index": 1.0,
        "fp/t/cutoff_index_low": 1.0,
        "fp/t/cutoff_index_high": 2.0,
        "fp/t/cutoff": 20150101.0,
    }
