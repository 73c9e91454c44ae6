"""A ``transformers`` Trainer callback that probes the live model on a built suite while it trains.

Every ``every_n_steps`` optimizer steps (and/or after each evaluation) the model being trained is
scored on the suite through :func:`factprobe.api.score_tables` (in memory, no copy to disk, no
request cache: the weights change), measured with :func:`factprobe.api.measures`, and the suite's
headline measures (means over facts, as ``summary.csv`` has them) go to ``trainer.log``, hence to
whatever logger the run reports to. For a timeline suite each slice's value and the effective
cut-off estimate (:mod:`factprobe.metrics.timeline`) are logged too: knowledge per time slice
while a model trains, what continual-pretraining studies need.

Probing leaves training as it was: it runs under ``torch.no_grad()`` with the model in eval mode,
then every module's train/eval flag, every parameter's ``requires_grad`` and gradient are put
back. A probe that fails raises (fail closed): a run never logs a partial measure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from factprobe import api


@contextmanager
def probing(model: Any):
    """``model`` in eval mode without autograd for the block; each module's mode and each
    parameter's ``requires_grad`` and ``.grad`` restored after it, also when it raises."""
    import torch

    modes = [(module, module.training) for module in model.modules()]
    params = [(p, p.requires_grad, p.grad) for p in model.parameters()]
    try:
        model.eval()
        with torch.no_grad():
            yield model
    finally:
        for module, training in modes:
            module.training = training
        for p, requires_grad, grad in params:
            p.requires_grad_(requires_grad)
            p.grad = grad


def metric_key(prefix: str, suite: str, row: Any, groups: Sequence[str]) -> str:
    """``<prefix>/<suite>/<measure>[@n][/<strategy>][/<group value>...]`` of one summary row;
    ``groups``: the summary's grouping columns (language, style, ...) whose values vary."""
    key = f"{prefix}/{suite}/{row.measure}"
    if int(row.n or 0):
        key += f"@{int(row.n)}"
    for part in (row.strategy, *(getattr(row, g) for g in groups)):
        if isinstance(part, str) and part:
            key += f"/{part}"
    return key


def summary_logs(
    per_fact, suite_level, suite: str, measures: Iterable[str], prefix: str, by: str | None, average: str
) -> dict[str, float]:
    """Mean over facts of each of ``measures`` (:func:`factprobe.metrics.pipeline.summarize`),
    also per value of the per-fact column ``by`` (e.g. the control experiment's ``split``)."""
    from factprobe.metrics.common import GROUP_KEYS
    from factprobe.metrics.pipeline import summarize

    rows = per_fact[per_fact["measure"].isin(list(measures))]
    varying = [g for g in GROUP_KEYS if rows[g].nunique() > 1]
    groups = [("", rows)] if by is None else [("", rows), *((f"{by}={v}", g) for v, g in rows.groupby(by))]
    logs = {}
    for label, part in groups:
        table = summarize("model", part, suite_level.iloc[:0], average)
        for row in table.itertuples():
            key = metric_key(prefix, suite, row, varying) + (f"/{label}" if label else "")
            logs[key] = float(row.value)
    return logs


def timeline_logs(curves, prefix: str, suite: str) -> dict[str, float]:
    """Each slice's value and the effective cut-off (slice index and its interval) of one model's
    :func:`factprobe.api.timeline` curves."""
    logs = {}
    for row in curves.itertuples():
        logs[f"{prefix}/{suite}/slice/{row.slice}/{row.measure}"] = float(row.value)
    first = curves.iloc[0]
    logs[f"{prefix}/{suite}/cutoff_index"] = float(first["cutoff_index"])
    logs[f"{prefix}/{suite}/cutoff_index_low"] = float(first["cutoff_index_low"])
    logs[f"{prefix}/{suite}/cutoff_index_high"] = float(first["cutoff_index_high"])
    if first["cutoff"]:
        logs[f"{prefix}/{suite}/cutoff"] = float(first["cutoff"])  # YYYYMMDD
    return logs


class FactprobeCallback(TrainerCallback):
    """Probe the model a ``transformers.Trainer`` trains on a built factprobe suite.

    ``suite``: ``<workdir>/results/probes/<suite>`` (or :func:`factprobe.api.open_suite`'s
    result); ``every_n_steps``: probe every n optimizer steps; ``on_evaluate``: probe after each
    evaluation; ``at_start``: probe once before the first step too (the baseline); ``measures``: per-fact measures to log (default the headline ones,
    :func:`factprobe.measures.fact_headline`); ``timeline``: log per-slice values and the cut-off
    estimate (default: when the suite is a timeline suite); ``by``: a per-fact column to log each
    measure per value of as well (e.g. ``"split"``); ``tokenizer``: default the Trainer's.

    Attach it with :meth:`attach` (``FactprobeCallback(...).attach(trainer)``): the values go
    through ``trainer.log``. :attr:`history` keeps ``(step, logs)`` of every probe.
    """

    def __init__(
        self,
        suite: str | Path | api.Suite,
        *,
        every_n_steps: int | None = None,
        on_evaluate: bool = False,
        at_start: bool = True,
        measures: Sequence[str] | None = None,
        timeline: bool | None = None,
        by: str | None = None,
        tokenizer: Any = None,
        config: str | Path | dict | None = None,
        prefix: str = "factprobe",
    ):
        from factprobe.measures import fact_headline
        from factprobe.plumbing.run_inputs import timeline_params

        if not every_n_steps and not on_evaluate:
            raise ValueError("FactprobeCallback: give every_n_steps=N, on_evaluate=True, or both")
        if every_n_steps is not None and every_n_steps < 1:
            raise ValueError(f"FactprobeCallback: every_n_steps {every_n_steps} is not a positive count")
        self.suite = api.open_suite(suite, config)
        self.every_n_steps = every_n_steps
        self.on_evaluate_ = on_evaluate
        self.at_start = at_start
        self.measures = list(measures) if measures is not None else fact_headline()
        is_timeline = self.suite.name in timeline_params(self.suite.cfg)
        if timeline and not is_timeline:
            raise api.SetupError(f"{self.suite.folder}: timeline=True, but the suite is not a timeline suite")
        self.timeline = is_timeline if timeline is None else timeline
        self.by = by
        self.tokenizer = tokenizer
        self.prefix = prefix
        self.trainer = None
        self.history: list[tuple[int, dict[str, float]]] = []

    def attach(self, trainer: Any) -> FactprobeCallback:
        """Add this callback to ``trainer`` and log through it."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def probe(self, model: Any, tokenizer: Any) -> dict[str, float]:
        """The values one probe logs, the model's modes and gradients left as they were."""
        if tokenizer is None:
            raise ValueError(
                "FactprobeCallback: no tokenizer (pass tokenizer= or the Trainer's processing_class)"
            )
        average = dict(self.suite.run.metrics[self.suite.name]).get("ranking_average", "facts")
        with probing(model):
            tables = api.score_tables((model, tokenizer), self.suite)
        name = tables.model
        per_fact, suite_level = api.measure_tables(tables, self.suite)
        logs = summary_logs(
            per_fact, suite_level, self.suite.name, self.measures, self.prefix, self.by, average
        )
        if self.timeline:
            curves = api.timeline({name: per_fact}, self.suite, declared={name: ""}).curves
            logs.update(timeline_logs(curves, self.prefix, self.suite.name))
        return logs

    def _log(self, state, kwargs) -> None:
        if self.trainer is None:
            raise RuntimeError(
                "FactprobeCallback: call .attach(trainer) so that it can log through trainer.log"
            )
        tokenizer = self.tokenizer or kwargs.get("processing_class") or kwargs.get("tokenizer")
        logs = self.probe(kwargs["model"], tokenizer)
        self.history.append((state.global_step, dict(logs)))
        self.trainer.log(logs)

    def on_train_begin(self, args, state, control, **kwargs):
        if self.at_start:
            self._log(state, kwargs)
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if self.every_n_steps and state.global_step % self.every_n_steps == 0:
            self._log(state, kwargs)
        return control

    def on_evaluate(self, args, state, control, **kwargs):
        if self.on_evaluate_:
            self._log(state, kwargs)
        return control
