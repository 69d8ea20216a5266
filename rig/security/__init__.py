"""The security conformance pack (issue 40; docs/security.md): named checks of a shuffler's
or panel's firmware update path, command authentication, deck-order leakage and undeclared
services, each with its CWE and the Deck Mate 2 finding it re-runs (IOActive, Black Hat 2023;
CVE-2025-34500, CVE-2025-34503), run against a simulated device (its declared flaws) or a
device on a bus, and reported as a record, an HTML report and JUnit (``feltlab certify
security``)."""
