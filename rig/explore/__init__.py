"""Deterministic simulation testing of the rig: scenarios, invariants and the runner
(docs/certification.md, "The explorer")."""
