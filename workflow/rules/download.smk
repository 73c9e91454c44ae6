# download stage: see docs/contracts.md
