# control stage: see docs/contracts.md
