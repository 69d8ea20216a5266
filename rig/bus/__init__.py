"""The bus stage of the rig: transports (python-can, ISO-TP), the simulated bus in simulated
time and its chaos, the capture (BLF and crash-safe journal) and the simulated slcan adapter
(docs/design.md, "Rig: subpackages and arrows")."""
