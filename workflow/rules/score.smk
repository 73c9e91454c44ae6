# score stage: see docs/contracts.md
