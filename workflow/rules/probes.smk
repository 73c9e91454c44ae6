# probes stage: see docs/contracts.md
