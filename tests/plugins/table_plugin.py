"""A test-only table and the strategy that reads it, registered from outside the library through
``FACTPROBE_PLUGINS``: tests/unit/test_strategy_tables.py plans and loads them.

* table ``toy_preferred``: the entity ids listed, one a line, in ``toy_preferred.txt`` beside
  this file: its ``paths`` name that file as the retrieval job's input ``toy_preferred`` (so an
  edit of the list reruns retrieval), its loader reads it in the job;
* strategy ``toy_preferred``: the listed entities that Ω(f) allows, in list order, the first n.

Only the standard library is imported at the top: the Snakefile imports this while parsing.
"""

from __future__ import annotations

from pathlib import Path

from factprobe.registries import strategy, table

LIST = Path(__file__).with_name("toy_preferred.txt")


def preferred_paths(settings, outputs):
    """The list beside this file, whatever the suite."""
    return {"toy_preferred": str(LIST)}


@table("toy_preferred", paths=preferred_paths)
def load_preferred(job):
    """The listed entity ids as integers, in file order."""
    return [int(line.strip()[1:]) for line in Path(job.path("toy_preferred")).read_text().split()]


@strategy("toy_preferred", tables=("toy_preferred",))
def preferred(ctx, i, fact_id, fact):
    """The listed entities Ω(f) allows, in list order, the first n."""
    from factprobe.distractors.retrieve import rows

    s, r, o = fact
    allowed = ctx.omega.filter(s, r, o, ctx.tables["toy_preferred"])
    return rows(fact_id, list(allowed)[: ctx.settings.n], "toy_preferred", side="object")
