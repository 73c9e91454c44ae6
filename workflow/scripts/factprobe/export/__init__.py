"""factprobe.export: a built suite as an lm-evaluation-harness task and a Hugging Face dataset.

* :mod:`factprobe.export.harness`: lm-eval multiple-choice task folders (YAML + jsonl) and
  the reverse direction, lm-eval ``--log_samples`` output read back as a factprobe score table.
* :mod:`factprobe.export.hf`: a ``datasets``-loadable Parquet folder with a dataset card.
"""
