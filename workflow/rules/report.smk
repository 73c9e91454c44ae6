# report stage: see docs/contracts.md
