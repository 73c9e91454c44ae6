# diff stage: see docs/contracts.md
