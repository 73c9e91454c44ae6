"""Rule script export_lm_eval: one suite as an lm-evaluation-harness task folder."""

import sys

sys.path.insert(0, snakemake.scriptdir)  # the workflow's own library first, not an installed copy

from factprobe.export.common import read_suite_table
from factprobe.export.harness import end_text, task_docs, write_task
from factprobe.plumbing.rulelog import rule_logger

log = rule_logger(snakemake)
inp, params = snakemake.input, snakemake.params
suite = snakemake.wildcards.suite


def table(*names):
    """A suite table from the named inputs this job has (translations are optional)."""
    return read_suite_table([inp[n] for n in names if n in inp.keys()])


end = end_text(params.end_marker, params.eos_text)
docs = task_docs(
    suite,
    table("prompts", "translated_prompts"),
    table("candidates"),
    table("forms", "translated_forms"),
    table("facts"),
    end,
    tuple(params.no_space_languages),
    params.correct_set,
)
tasks = write_task(docs, snakemake.output.task, suite, params.end_marker, end)
log.info("wrote %d docs as tasks %s", len(docs), tasks)
