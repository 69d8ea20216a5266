"""Built-in feltlab plugins: one module per wager or game mode, registered before any
third-party plugin (see ``feltlab.plugin_manager``)."""

BUILTIN_PLUGINS: tuple[str, ...] = (
    "feltlab.plugins.main",
    "feltlab.plugins.insurance",
    "feltlab.plugins.perfect_pairs",
    "feltlab.plugins.super_sevens",
    "feltlab.plugins.madness21",
    "feltlab.plugins.tournament",
)
