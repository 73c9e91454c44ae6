"""A suite as an lm-evaluation-harness multiple-choice task, and lm-eval samples read back.

Export (:func:`task_docs`, :func:`write_task`): one lm-eval doc per (prompt, distractor
strategy). Its ``query`` is the text factprobe scores (``context + text``) and its ``choices``
are the continuations factprobe scores for that prompt - every form of the object, then every
form of the strategy's distractors in rank order - so lm-eval requests exactly the
(context, continuation) pairs of :func:`factprobe.scoring.suite.build_pairs`. Parallel lists
``choice_entity``, ``choice_form``, ``choice_role``, ``choice_rank`` and the doc's ``prompt_id``,
``fact_id``, ``template_id``, ``strategy`` map each choice back to the suite tables; ``gold``
lists the object's choices (lm-eval's multi-target ``acc``: the top choice is a form of o).

End marker: factprobe scores log P(form + end | c) (``scoring.end_marker``: ``eos`` appends the
model's end token, :func:`factprobe.lm.encoding.model_end_token`; ``.`` a full stop;
``none`` nothing); lm-eval scores a choice's text as given. The export writes the end marker into
each choice's text (:func:`end_text`): ``.`` as is, ``eos`` as the document-end token's text
(``export.eos_text``, ``<|endoftext|>`` for GPT-2, Pythia, Qwen, SmolLM2 - Instruct included -
and builtin:control), which the tokenizer encodes to that token's id. lm-eval's log-likelihood of
a choice then equals factprobe's logprob of that form (tested to 1e-4, with a real instruction
model too) for models whose document end has that text; each doc records the text
(``end_text``) and :func:`read_samples` refuses samples of a model that factprobe ends with
another token. For those export again with their token's text, or with ``none``.
lm-eval sets ``target_delimiter: ""`` because the choices carry factprobe's own leading space
(none for languages written without spaces).

Import (:func:`read_samples`): the per-sample jsonl of ``lm_eval --log_samples`` on such a
task becomes the score table ``prompt_id, entity, form, logprob, n_tokens`` (+ ``fact_id,
lang``; ``first_logprob`` is NaN: lm-eval reports no per-token values), so runs made with
lm-eval feed factprobe's measures. Only pairs scored alike agree: a boundary merge between
prompt and form (rare; no-space languages) is a chain-rule difference in factprobe and a
split encoding in lm-eval (:mod:`factprobe.lm.encoding`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from factprobe import __version__
from factprobe.io import atomic_dir
from factprobe.lm.encoding import form_end
from factprobe.metrics.common import CORRECT_FORM_SOURCES
from factprobe.scoring.suite import NO_SPACE_LANGS, build_pairs

log = logging.getLogger(__name__)


DOCS_FILE = "docs.jsonl"
LOADER_FILE = "factprobe_docs.py"
PROMPT_FIELDS = ("lang", "template_id", "style", "shots", "verbalization", "subject_form")
FACT_FIELDS = ("subject", "property", "object", "split")
SCORE_COLUMNS = ["prompt_id", "entity", "form", "logprob", "n_tokens", "first_logprob", "fact_id", "lang"]

# Written into every task folder: lm-eval imports it through ``custom_dataset: !function``,
# relative to the YAML, so the folder can be moved or shared as a whole.
LOADER = '''"""Docs of a factprobe export for lm-evaluation-harness (``custom_dataset`` of the task YAMLs)."""

import json
from pathlib import Path

import datasets

DOCS = Path(__file__).resolve().parent / "docs.jsonl"


def load_docs(select_strategy=None, **_):
    """The docs of one distractor strategy as lm-eval's test split (other kwargs: task metadata)."""
    with open(DOCS, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    rows = [row for row in rows if select_strategy is None or row["strategy"] == select_strategy]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
'''


def end_text(end_marker: str, eos_text: str = "") -> str:
    """Text appended to every choice so lm-eval scores what factprobe scores (module docstring):
    the one end rule's text (:func:`factprobe.lm.encoding.form_end`) with ``export.eos_text`` as
    the end token's text."""
    missing = (
        "export.eos_text is empty: set it to the EOS token text of the models to evaluate "
        "(e.g. '<|endoftext|>'), or export with end marker 'none'"
    )
    return form_end(end_marker, eos_text or None, missing=missing).text


def _require(frame: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; see docs/contracts.md")


def gold_form_mask(objects: pd.DataFrame, forms: pd.DataFrame, correct_set: str) -> np.ndarray:
    """Which object rows (``entity, lang, form``) are gold under ``correct_set`` (True for all
    with ``wide``); the forms table's ``source`` tells labels and inflections from aliases."""
    sources = CORRECT_FORM_SOURCES[correct_set]
    if sources is None:
        return np.ones(len(objects), dtype=bool)
    _require(forms, ["entity", "lang", "form", "source"], "forms")
    allowed = forms.loc[forms["source"].isin(sources), ["entity", "lang", "form"]].astype(str)
    keys = pd.MultiIndex.from_frame(objects[["entity", "lang", "form"]].astype(str))
    return keys.isin(pd.MultiIndex.from_frame(allowed))


def task_docs(
    suite: str,
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    facts: pd.DataFrame,
    end: str = "",
    no_space_langs: tuple[str, ...] = NO_SPACE_LANGS,
    correct_set: str = "wide",
) -> list[dict]:
    """lm-eval docs of a suite: one per (prompt, distractor strategy), in a stable order.

    ``correct_set`` (``suites.<s>.correct_set``) decides which of the object's forms are gold
    choices, as in the metrics (:func:`factprobe.metrics.common.correct_form_scores`): with
    ``table1`` the object's aliases are no choice at all (fluent-mLAMA Table 1).

    ``end`` is the end-marker text from :func:`end_text`. A prompt whose object has no form in
    its language, or a strategy without a scorable distractor for the fact, gives no doc
    (counted in the log): there is no choice to make.
    """
    _require(candidates, ["fact_id", "entity", "role", "strategy", "rank"], "candidates")
    _require(facts, ["fact_id", *FACT_FIELDS], "facts")
    obj, dis = _choice_lists(prompts, candidates, forms, end, no_space_langs, correct_set)
    with_dis = set(dis.index.get_level_values("prompt_id"))
    no_object = len(with_dis - set(obj.index))  # prompts without an object form in their language
    no_distractor = len(set(obj.index) - with_dis)  # facts without any scorable distractor
    if no_object or no_distractor:
        log.warning(
            "%s: no doc for %d prompts without an object form and %d without any distractor form",
            suite,
            no_object,
            no_distractor,
        )
    frame = dis.reset_index().merge(obj.reset_index(), on="prompt_id", how="inner")
    meta = prompts.drop_duplicates("prompt_id").reindex(columns=["prompt_id", *PROMPT_FIELDS])
    frame = frame.merge(meta, on="prompt_id", how="left").merge(
        facts.drop_duplicates("fact_id")[["fact_id", *FACT_FIELDS]], on="fact_id", how="left"
    )
    frame = frame.sort_values(["strategy", "prompt_id"], kind="stable")
    docs = [_doc(suite, {**r, "end_text": end}) for r in frame.to_dict("records")]
    log.info("%s: %d docs over %d prompts", suite, len(docs), frame["prompt_id"].nunique())
    return docs


def _choice_lists(
    prompts: pd.DataFrame,
    candidates: pd.DataFrame,
    forms: pd.DataFrame,
    end: str,
    no_space_langs: tuple[str, ...],
    correct_set: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gold choices per prompt, wrong choices per prompt and strategy): lists of choice text,
    entity, form and rank, ordered by strategy, rank, entity and form."""
    pairs = build_pairs(prompts, candidates, forms, no_space_langs)
    roles = candidates[["fact_id", "entity", "role", "strategy", "rank"]].drop_duplicates(
        ["fact_id", "entity", "role", "strategy"]
    )
    rows = pairs.merge(roles, on=["fact_id", "entity"], how="inner")
    rows = rows.sort_values(["prompt_id", "strategy", "rank", "entity", "form"], kind="stable")
    rows["choice"] = rows["continuation"] + end
    lists = {"choice": list, "entity": list, "form": list, "rank": list}
    obj_rows = rows[rows["role"] == "object"].drop_duplicates(["prompt_id", "entity", "form"])
    obj_rows = obj_rows[gold_form_mask(obj_rows, forms, correct_set)]
    obj = obj_rows.groupby("prompt_id", sort=True).agg(
        fact_id=("fact_id", "first"),
        query=("prompt_text", "first"),
        **{f"o_{k}": (k, f) for k, f in lists.items()},
    )
    dis = rows[rows["role"] == "distractor"].drop_duplicates(["prompt_id", "strategy", "entity", "form"])
    # A distractor that is the object itself (PROBELM subject-side alternatives can be) is no
    # wrong choice: it is not repeated.
    is_object = pd.MultiIndex.from_frame(dis[["prompt_id", "entity"]]).isin(
        pd.MultiIndex.from_frame(obj_rows[["prompt_id", "entity"]])
    )
    dis = dis[~is_object]
    dis = dis.groupby(["prompt_id", "strategy"], sort=True).agg(
        **{f"d_{k}": (k, f) for k, f in lists.items()}
    )
    return obj, dis


def _doc(suite: str, r: dict) -> dict:
    """One lm-eval doc: gold choices first, then the strategy's distractors."""
    return {
        "doc_id": f"{r['prompt_id']}|{r['strategy']}",
        "suite": suite,
        "prompt_id": r["prompt_id"],
        "fact_id": r["fact_id"],
        **{f: _plain(r[f]) for f in FACT_FIELDS},
        **{f: _plain(r[f]) for f in PROMPT_FIELDS},
        "strategy": r["strategy"],
        "query": r["query"],
        "choices": r["o_choice"] + r["d_choice"],
        "choice_entity": [str(e) for e in r["o_entity"] + r["d_entity"]],
        "choice_form": [str(f) for f in r["o_form"] + r["d_form"]],
        "choice_role": ["object"] * len(r["o_form"]) + ["distractor"] * len(r["d_form"]),
        "choice_rank": [int(k) for k in r["o_rank"] + r["d_rank"]],
        "gold": list(range(len(r["o_form"]))),
        "end_text": r["end_text"],
    }


def _plain(value):
    """A JSON-ready scalar (numpy ints and pandas NA become int / empty string)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, np.integer):
        return int(value)
    return value if isinstance(value, int | float) else str(value)


def task_name(suite: str, strategy: str) -> str:
    """lm-eval task name of one strategy of a suite (tags: ``factprobe_<suite>``, ``factprobe``)."""
    return f"factprobe_{suite}_{strategy}".replace("+", "_").replace("-", "_")


def task_yaml(suite: str, strategy: str, end_marker: str, end: str) -> str:
    """Text of one task YAML (``!function`` is not plain YAML, so that line is written by hand)."""
    body = {
        "task": task_name(suite, strategy),
        "tag": [f"factprobe_{suite}", "factprobe"],
        "dataset_kwargs": {"select_strategy": strategy},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": "query",
        "doc_to_choice": "choices",
        "doc_to_target": "gold",
        "target_delimiter": "",
        "num_fewshot": 0,
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {
            "version": 1,
            "factprobe_version": __version__,
            "suite": suite,
            "strategy": strategy,
            "end_marker": end_marker,
            "end_text": end,
        },
    }
    header = (
        f"# factprobe {__version__}: suite {suite}, distractor strategy {strategy}.\n"
        "# Choices already hold their leading space and the end marker (README.md in this folder).\n"
    )
    return (
        header
        + f"custom_dataset: !function {Path(LOADER_FILE).stem}.load_docs\n"
        + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
    )


def task_readme(suite: str, strategies: list[str], end_marker: str, end: str, n_docs: int) -> str:
    """How to run the exported task and read its results back."""
    names = ",".join(task_name(suite, s) for s in strategies)
    return f"""# factprobe suite `{suite}` as an lm-evaluation-harness task

{n_docs} docs: one per (prompt, distractor strategy); tasks {", ".join(f"`{task_name(suite, s)}`" for s in strategies)}
(tag `factprobe_{suite}` runs them all). Each doc's `query` is the prompt factprobe scores
(few-shot context included: do not add `--num_fewshot`); `choices` are the object's forms then
the distractors' forms, each with its leading space and the end marker `{end_marker}` written as
{json.dumps(end)}. `gold` indexes the object's forms; `prompt_id`, `fact_id`, `template_id`,
`strategy` and `choice_entity` / `choice_form` map results back to the suite tables.

    lm_eval --model hf --model_args pretrained=PATH --include_path {{this folder}} \\
        --tasks {names} --log_samples --output_path out/

lm-eval's `acc` is "the top choice is a form of the object". factprobe's measures (K Min@n,
Avg@n, ...) need the per-choice log-likelihoods: read the samples back with
`python -m factprobe.export.harness out/.../samples_*.jsonl --tokenizer PATH --out scores.parquet`.
With end marker `eos`, the choices end in the text of the document-end token factprobe scores
after a form for GPT-2, Pythia, Qwen, SmolLM2 (Instruct included) and its control model; a model
whose document end has another text (Llama 2 `</s>`, Llama 3 `<|end_of_text|>`) needs an export with
its own `export.eos_text` (the read-back above refuses a mismatch).
"""


def write_task(
    docs: list[dict], folder: str | os.PathLike, suite: str, end_marker: str, end: str
) -> list[str]:
    """Write the task folder atomically: docs.jsonl, the loader, one YAML per strategy, README.

    Returns the task names.
    """
    if not docs:
        raise ValueError(f"suite {suite}: no lm-eval doc to write (no prompt has an object and a distractor)")
    strategies = sorted({d["strategy"] for d in docs})
    with atomic_dir(folder) as tmp:
        with open(tmp / DOCS_FILE, "w", encoding="utf-8") as handle:
            for doc in docs:
                handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
        (tmp / LOADER_FILE).write_text(LOADER, encoding="utf-8")
        for strategy in strategies:
            (tmp / f"{task_name(suite, strategy)}.yaml").write_text(
                task_yaml(suite, strategy, end_marker, end), encoding="utf-8"
            )
        (tmp / "README.md").write_text(
            task_readme(suite, strategies, end_marker, end, len(docs)), encoding="utf-8"
        )
    return [task_name(suite, s) for s in strategies]


# --- lm-eval samples -> score table ---------------------------------------------------------


def _choice_logprobs(sample: dict, where: str) -> list[float]:
    """Per-choice log-likelihoods of one sample (``filtered_resps``: [[logprob, is_greedy], ...])."""
    resps = sample.get("filtered_resps")
    if resps is None:
        resps = [r[0] if r and isinstance(r[0], list) else r for r in sample.get("resps", [])]
    try:
        return [float(r[0]) for r in resps]
    except (TypeError, ValueError, IndexError) as exc:
        raise ValueError(
            f"{where}: cannot read per-choice log-likelihoods from filtered_resps/resps ({exc})"
        ) from exc


def check_end_text(doc: dict, tokenizer, end_token: str, where: str) -> None:
    """A doc exported with end marker ``eos`` ends its choices in the text of the token factprobe
    scores after a form with this tokenizer (its document end, or models.tsv ``end_token``);
    otherwise lm-eval's log-likelihoods are of another string than factprobe's scores."""
    from factprobe.lm.encoding import model_end_token

    text = doc.get("end_text", "")
    if text in ("", "."):
        return
    token = model_end_token(tokenizer, end_token)
    if token is None or token.text != text:
        raise ValueError(
            f"{where}: the task's choices end in {text!r} but factprobe ends this model's forms with "
            f"{token.describe() if token else 'no token'}: export again with export.eos_text set to "
            f"{token.text if token else ''!r} (or pass --end-token when the models.tsv row names one)"
        )


def _sample_records(path: str | os.PathLike, tokenizer, end_token: str) -> Iterator[tuple]:
    """One record per choice of each doc of one ``--log_samples`` file: (prompt_id, entity, form,
    logprob, fact_id, lang, query, choice); a line that is not such a sample fails naming it."""
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not a JSON line ({exc})") from exc
            doc = sample.get("doc") or {}
            missing = [
                k for k in ("prompt_id", "query", "choices", "choice_entity", "choice_form") if k not in doc
            ]
            if missing:
                raise ValueError(
                    f"{where}: doc lacks {missing}; is this the samples file of a factprobe export "
                    "(lm_eval --log_samples on a task written by `snakemake export`)?"
                )
            check_end_text(doc, tokenizer, end_token, where)
            lps = _choice_logprobs(sample, where)
            if len(lps) != len(doc["choices"]):
                raise ValueError(f"{where}: {len(lps)} log-likelihoods for {len(doc['choices'])} choices")
            for i, lp in enumerate(lps):
                entity, form, choice = doc["choice_entity"][i], doc["choice_form"][i], doc["choices"][i]
                yield (
                    doc["prompt_id"],
                    entity,
                    form,
                    lp,
                    doc.get("fact_id", ""),
                    doc.get("lang", ""),
                    doc["query"],
                    choice,
                )


def read_samples(paths: Iterable[str | os.PathLike], tokenizer, end_token: str = "") -> pd.DataFrame:
    """The score table (docs/contracts.md) of lm-eval ``--log_samples`` files of exported tasks.

    ``tokenizer`` (a transformers tokenizer of the evaluated model) gives ``n_tokens`` - lm-eval
    does not report token counts - with the same joint tokenization as factprobe, and the end
    token the docs' ``end_text`` must be (:func:`check_end_text`; ``end_token`` = the model's
    models.tsv cell). A pair met in several docs (the object's forms recur in every strategy's
    doc) keeps its first value; the largest disagreement between repeats is logged.
    """
    from factprobe.lm.encoding import tokenize_pairs

    records = [record for path in paths for record in _sample_records(path, tokenizer, end_token)]
    cols = ["prompt_id", "entity", "form", "logprob", "fact_id", "lang", "query", "choice"]
    frame = pd.DataFrame(records, columns=cols)
    if frame.empty:
        raise ValueError("no lm-eval samples read: check the --log_samples file paths")
    repeats = frame.groupby(["prompt_id", "entity", "form"], sort=False)["logprob"]
    spread = repeats.max() - repeats.min()
    log.info(
        "%d samples rows, largest spread between repeats of a pair %.2e nats", len(frame), float(spread.max())
    )
    frame = frame.drop_duplicates(["prompt_id", "entity", "form"]).reset_index(drop=True)
    _, plans = tokenize_pairs(tokenizer, frame["query"].tolist(), frame["choice"].tolist(), "none")
    frame["n_tokens"] = np.array([p.n_tokens for p in plans], dtype=np.int32)
    frame["first_logprob"] = np.nan
    frame["logprob"] = frame["logprob"].astype(np.float64)
    return frame[SCORE_COLUMNS]


def main(argv: list[str] | None = None) -> None:
    """Command line: lm-eval samples files -> a factprobe score table (Parquet)."""
    import argparse

    from transformers import AutoTokenizer

    from factprobe.io import write_frame

    parser = argparse.ArgumentParser(
        description="lm-eval --log_samples jsonl of a factprobe export -> score table"
    )
    parser.add_argument("samples", nargs="+", help="samples_<task>_<date>.jsonl files")
    parser.add_argument(
        "--tokenizer", required=True, help="local tokenizer folder of the evaluated model (n_tokens)"
    )
    parser.add_argument("--out", required=True, help="score table to write (.parquet)")
    parser.add_argument(
        "--end-token", default="", help="the model's models.tsv end_token cell, when it names one"
    )
    args = parser.parse_args(argv)
    scores = read_samples(args.samples, AutoTokenizer.from_pretrained(args.tokenizer), args.end_token)
    write_frame(scores, args.out)
    print(f"{args.out}: {len(scores)} scores of {scores['prompt_id'].nunique()} prompts")


if __name__ == "__main__":
    main()
