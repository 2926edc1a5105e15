"""The session's hooks: callbacks per event name (:data:`HOOK_NAMES`), fired by the session and
never able to break a turn."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..dotted import resolve_dotted
from ..settings import HOOK_EVENTS

__all__ = ["HOOK_NAMES", "Hooks"]

log = logging.getLogger(__package__)  # the session's logger, as before it became a package

HOOK_NAMES = HOOK_EVENTS  # the events a hook can be set for, as settings check them


class Hooks:
    """Callbacks per event name; a hook that raises is logged and never breaks a turn."""

    def __init__(self, hooks: Mapping[str, Any] | None = None) -> None:
        self._hooks: dict[str, list[Callable[..., Any]]] = {name: [] for name in HOOK_NAMES}
        for name, value in (hooks or {}).items():
            for hook in value if isinstance(value, list | tuple) else [value]:
                self.add(name, hook)

    def add(self, name: str, hook: Callable[..., Any] | str) -> None:
        """Register ``hook`` (a callable or a dotted path) for ``name``."""
        if name not in self._hooks:
            raise ValueError(f"unknown hook {name!r}; hooks: {', '.join(HOOK_NAMES)}")
        if isinstance(hook, str):
            hook = resolve_dotted(hook, key=f"hooks.{name}")
        if not callable(hook):
            raise ValueError(f"hook {name!r} is not callable")
        self._hooks[name].append(hook)

    def fire(self, name: str, **payload: Any) -> None:
        """Call every hook for ``name``."""
        for hook in self._hooks.get(name, ()):
            try:
                hook(**payload)
            except Exception:
                log.exception("the %s hook %r raised; the turn goes on", name, hook)
