"""The certify stage of the rig: profiles, collection, analysis from the capture, the
randomness battery, measurements, faults, the record and the report (docs/certification.md,
docs/design.md)."""
