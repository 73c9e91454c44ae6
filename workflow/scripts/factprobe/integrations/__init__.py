"""Integrations with other tools (transformers Trainer, lm-evaluation-harness); each imports its tool lazily."""
