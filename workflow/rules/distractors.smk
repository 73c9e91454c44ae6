# distractors stage: see docs/contracts.md
