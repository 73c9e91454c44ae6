"""A suite as a Hugging Face ``datasets``-loadable Parquet folder with a dataset card.

Layout: ``data/<config>.parquet`` for the configs ``facts``, ``prompts``, ``candidates`` and
``forms`` (the suite tables of docs/contracts.md, translations concatenated in), one split
``test`` each, and ``README.md`` whose YAML header declares the configs, so that
``datasets.load_dataset(folder, "prompts", split="test")`` works offline; each file also loads
alone with ``load_dataset("parquet", data_files=...)``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from factprobe import __version__
from factprobe.io import atomic_dir, read_table
from factprobe.registries import TEMPLATE_FORMATS

CONFIGS = ("facts", "prompts", "candidates", "forms")

# Column meanings (docs/contracts.md); a column not listed here is described as "see contracts".
FIELDS = {
    "facts": {
        "fact_id": 'fact key "subject|property|object" (Wikidata ids)',
        "subject": "subject item id (Q...)",
        "property": "relation (P...)",
        "object": "the object probed for (Q...)",
        "objects": "every valid object of (subject, property) at the dump date",
        "popularity": "subject popularity (sitelinks) used for stratified sampling",
        "stratum": "popularity stratum",
        "split": "taught/untaught: the hash-chosen half the builtin control model is trained on",
        "dump": "Wikidata dump date (YYYYMMDD) the fact was read from",
    },
    "prompts": {
        "prompt_id": "prompt key (fact_id|template_id|lang|subject_form_index|shots)",
        "fact_id": "fact of the prompt",
        "lang": "language code",
        "template_id": "template the prompt was filled from",
        "style": "statement / completion / question",
        "subject_form": "subject label or alias used",
        "text": "the prompt; the model scores context + text + ' ' + object form",
        "context": "instruction and few-shot demonstrations before the text (empty if none)",
        "verbalization": "template (filled template) or sentence (machine-translated sentence)",
        "shots": "few-shot setting (none, zero-shot, k-random, k-relation, k-template)",
        "subject_form_index": "0 = label, 1.. = aliases",
        "property": "relation (P...)",
        "demos": "fact ids of the few-shot demonstrations",
    },
    "candidates": {
        "fact_id": "fact",
        "entity": "candidate answer (Q...)",
        "role": "object or distractor",
        "strategy": "object, or the distractor strategy (random, sem, temp, cooccur, pool)",
        "rank": "rank within (fact, strategy); 0 for the object",
        "relevance": "graded plausibility (cooccur), else null",
        "side": "slot the entity fills: object or subject (cooccur only)",
        "source": "temporal or sem inside the temp strategy",
        "lang": "pool language (pool strategy), else null",
        "score": "co-occurrence frequency (cooccur), else null",
    },
    "forms": {
        "entity": "entity (Q...)",
        "lang": "language code",
        "form": "surface form scored as the answer",
        "source": "label, alias or inflected (found in a translated sentence)",
    },
}

# Hugging Face size_categories by the largest table's row count.
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (float("inf"), "n>100K"))


def suite_tables(inputs: dict[str, list[str]]) -> dict[str, pa.Table]:
    """One Arrow table per config from its files (e.g. prompts + translated_prompts)."""
    tables = {}
    for name in CONFIGS:
        paths = inputs.get(name) or []
        if not paths:
            raise ValueError(f"no {name} table given: the export needs {list(CONFIGS)}")
        parts = [read_table(p).replace_schema_metadata(None) for p in paths]
        tables[name] = pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]
    return tables


def template_licences(template_sets: dict[str, dict]) -> dict[str, str]:
    """SPDX-style licence id of each template set, its format's (``TemplateFormat.licence``;
    resources/templates/README.md): the team's own templates share the code's."""
    out = {}
    for name, spec in template_sets.items():
        licence = TEMPLATE_FORMATS[spec.get("format", "yaml")].licence
        if licence is None:
            own = Path(spec.get("path", "")).as_posix().rstrip("/").endswith("resources/templates")
            licence = "apache-2.0" if own else "other"
        out[name] = licence
    return out


def dataset_card(
    suite: str,
    settings: dict,
    dumps: list[dict],
    template_sets: dict[str, dict],
    tables: dict[str, pa.Table],
) -> str:
    """README.md of the dataset: YAML header (configs, licences, languages) and the card text."""
    licences = template_licences(template_sets)
    lines = [
        "---",
        yaml.safe_dump(card_header(suite, licences, tables), sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# factprobe suite `{suite}` ({settings.get('kind', '?')})",
        "",
        f"A factual-knowledge probing benchmark built by factprobe {__version__} from Wikidata dumps: "
        "facts (subject, relation, object), prompts that verbalize them, the object and distractor "
        "candidates a model must rank, and every surface form scored. Load one config:",
        "",
        "```python",
        "from datasets import load_dataset",
        'prompts = load_dataset("path/to/this/folder", "prompts", split="test")',
        "```",
        "",
        "A model's score of a candidate is log P(form + end marker | context + text), with one space "
        "before the form in languages written with spaces; factprobe sums it over an entity's forms "
        "(Pl(o|c), distractors-knowledge-measure §3.2).",
        "",
        *_card_fields(tables),
        *_card_provenance(suite, settings, dumps, template_sets, licences),
        "## Licence",
        "",
        "Facts, labels and aliases come from Wikidata, released under CC0 1.0 (public domain). "
        "Prompts combine them with templates under the licence of their set: factprobe's own "
        "templates (resources/templates) are Apache-2.0 like the code; ParaRel patterns are MIT; "
        "LAMA-derived sets are CC BY-NC 4.0 and X-FACTR or other external sets carry their own terms "
        "(research use only where none is stated). Rows with `verbalization = sentence` were "
        "machine-translated; check the MT model's terms before redistributing them.",
        "",
    ]
    return "\n".join(lines)


def card_header(suite: str, licences: dict[str, str], tables: dict[str, pa.Table]) -> dict:
    """The card's YAML header: name, licences, languages, tags, size and configs."""
    ids = ["cc0-1.0", *sorted(set(licences.values()) - {"cc0-1.0"})]
    langs = sorted({str(x) for x in tables["prompts"].column("lang").to_pylist() if x})
    n_rows = max(t.num_rows for t in tables.values())
    size = next(label for bound, label in SIZES if n_rows < bound)
    return {
        "pretty_name": f"factprobe suite {suite}",
        "license": ids,
        "language": langs,
        "tags": ["factual-knowledge", "probing", "wikidata", "factprobe"],
        "task_categories": ["multiple-choice"],
        "size_categories": [size],
        "configs": [
            {"config_name": name, "data_files": [{"split": "test", "path": f"data/{name}.parquet"}]}
            for name in CONFIGS
        ],
    }


def _card_fields(tables: dict[str, pa.Table]) -> list[str]:
    """Section "Configs and fields": one table of fields per config."""
    lines = ["## Configs and fields", ""]
    for name in CONFIGS:
        table = tables[name]
        lines += [f"### `{name}` ({table.num_rows} rows)", "", "| field | type | meaning |", "|---|---|---|"]
        for field in table.schema:
            meaning = FIELDS[name].get(field.name, "see docs/contracts.md of factprobe")
            lines.append(f"| `{field.name}` | {field.type} | {meaning} |")
        lines.append("")
    return lines


def _card_provenance(
    suite: str, settings: dict, dumps: list[dict], template_sets: dict[str, dict], licences: dict[str, str]
) -> list[str]:
    """Section "How it was built": dumps, template sets, resolved settings, how to rebuild."""
    lines = ["## How it was built", "", "Wikidata dumps:", ""]
    for row in dumps:
        where = row.get("url") or row.get("path") or "?"
        check = row.get("checksum") or row.get("sha1") or row.get("md5") or "no checksum"
        lines.append(f"- `{row['dump']}`: {where} ({check})")
    return lines + [
        "",
        "Template sets: "
        + ", ".join(f"`{n}` ({s.get('format', 'yaml')}, {licences[n]})" for n, s in template_sets.items())
        + ".",
        "",
        "Suite settings (`suites." + suite + "` of factprobe's config, distractor settings resolved):",
        "",
        "```yaml",
        yaml.safe_dump(settings, sort_keys=True, allow_unicode=True).rstrip(),
        "```",
        "",
        "Rebuild: `snakemake --cores 4 export` in a factprobe checkout with the same config and dumps.",
        "",
    ]


def write_hf_dataset(tables: dict[str, pa.Table], card: str, folder: str | os.PathLike) -> None:
    """Write ``data/<config>.parquet`` and README.md atomically into ``folder``."""
    with atomic_dir(folder) as tmp:
        (tmp / "data").mkdir()
        for name in CONFIGS:
            pq.write_table(tables[name], tmp / "data" / f"{name}.parquet", compression="zstd")
        (tmp / "README.md").write_text(card, encoding="utf-8")
