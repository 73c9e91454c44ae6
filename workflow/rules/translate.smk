# translate stage: see docs/contracts.md
