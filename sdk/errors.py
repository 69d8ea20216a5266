"""feltlab's exception classes: each message names the problem and the fix."""

from __future__ import annotations


class FeltlabError(Exception):
    """Base of every error feltlab raises on purpose."""


class PluginError(FeltlabError):
    """A plugin failed to load or broke the plugin contract; the message names the plugin."""
