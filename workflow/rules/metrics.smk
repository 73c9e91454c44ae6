# metrics stage: see docs/contracts.md
