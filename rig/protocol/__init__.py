"""The protocol stage of the rig: the DBC codec and ISO-TP payloads (``feltlab_v2.dbc``,
docs/protocol.md), SecOC authentication and the freshness counters (docs/design.md)."""
