"""The one registry type: classes that plugins provide, by name.

A register hook (``feltlab_register_wagers``, ``feltlab_register_tournament_strategies``) hands
each plugin a registry's :meth:`Registry.register` as its ``register`` callback (the
register-callback pattern of tox and llm); :func:`feltlab.plugin_manager.collect` calls the hook
and wraps any failure in a :class:`feltlab.errors.PluginError` naming the plugin.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from feltlab.errors import FeltlabError, PluginError

T = TypeVar("T")


class Registry(Generic[T]):
    """Subclasses of ``base`` by their ``name`` class attribute, in registration order
    (built-in plugins first).

    :param base: the class every registered class must subclass (abstract classes welcome).
    :param noun: what one entry is, for messages (``"wager type"``, ``"betting strategy"``).
    :param unknown: the :class:`FeltlabError` subclass raised for a name not registered.
    """

    def __init__(self, base: type, *, noun: str, unknown: type[FeltlabError]) -> None:
        self._base = base
        self._noun = noun
        self._unknown = unknown
        self._types: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> None:
        """The callback handed to plugins: add one subclass of the registry's base.  Raises
        :class:`PluginError` for anything else, a class without a ``name``, or a name another
        class already took."""
        base = self._base
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise PluginError(f"register() takes a {base.__name__} subclass, got {cls!r}")
        name = getattr(cls, "name", "")
        if not name:
            raise PluginError(f"{cls.__qualname__} has no name: set the class attribute")
        taken = self._types.get(name)
        if taken is not None and taken is not cls:
            raise PluginError(
                f"{self._noun} {name!r} is registered by both {taken.__module__} and "
                f"{cls.__module__}; rename one"
            )
        self._types[name] = cls

    def __getitem__(self, name: str) -> type[T]:
        """The class registered as ``name``; the registry's ``unknown`` error listing the
        registered names otherwise."""
        try:
            return self._types[name]
        except KeyError:
            raise self._unknown(
                f"no {self._noun} {name!r} is registered; loaded: {sorted(self._types)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def names(self) -> list[str]:
        """Registered names, in registration order (built-ins first)."""
        return list(self._types)
