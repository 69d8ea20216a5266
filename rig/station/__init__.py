"""The test station (issue 42): several devices certified at once, each socket's campaign in a
process of its own, from one station file (``feltlab station run STATION.toml``).

One concept a module: the station file (:mod:`.config`), the device pool's cross-process locks
(:mod:`.pool`), the bus budget checked at start (:mod:`.budget`), the station record of what
happened when (:mod:`.record`), the requests another process makes of a running station
(:mod:`.control`), one socket's process (:mod:`.child`), the supervisor that starts, stops and
resumes the sockets (:mod:`.supervisor`), the operator page (:mod:`.page`) and the batch report
(:mod:`.report`).  A socket's campaign is driven through its public entry, the ``feltlab
certify`` command, so its folder is the one a lone campaign writes for the same seed
(docs/station.md).
"""
