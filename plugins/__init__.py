"""Built-in feltlab plugins: one module per wager or game mode, registered before any
third-party plugin, in the order of ``feltlab.plugin_manager.BUILTIN_PLUGINS``."""
