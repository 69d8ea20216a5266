"""The generator itself: raw output, the NIST SP 800-22 battery, flawed generators (docs/rng.md)."""
