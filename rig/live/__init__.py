"""The live view of a campaign: observer, feed, server and the offline snapshot
(docs/certification.md, "The live view")."""
