"""A conversation: persistence, context window, limits, audit, hooks and confirmations.

:class:`ChatSession` is what the notebook API, the widget and the server extension drive. It
owns one conversation of one actor in the store, builds each turn's bounded context, admits turns
against the actor's budgets, journals every event with its sequence number, and runs the
:class:`~gmchat_nb.core.loop.ToolLoop`. Confirmations are persisted and claimed atomically, so a
mutation can run at most once however many processes or requests try to confirm it.

The package, one module a job (import from the package, not the modules).
:class:`ChatSession` stays one class, so that a turn's state (its queued rows, its journal, its
waiters) has one owner and one place to read; what needs none of that state lives beside it as
plain functions and small classes that take what they use:

* :mod:`.chat_session` -- :class:`ChatSession`: turns, resumption, confirmation, the
  :class:`~gmchat_nb.core.loop.TurnIO` the loop calls, and writing a turn to the store;
  :func:`turn_start`, what a turn's admission is handed to start it (its budgets and the rate
  limiter's decision on them);
* :mod:`.actor` -- :class:`Actor`, who is chatting;
* :mod:`.hooks` -- :class:`Hooks` and :data:`HOOK_NAMES`;
* :mod:`.confirmations` -- a confirmation waited on in this process, and a turn resumed after
  a persisted one was decided;
* :mod:`.context` -- the bounded context of a turn: system prompt, summary, recent window;
* :mod:`.offer` -- the tools and system prompt offered to the model, built once and shared;
* :mod:`.messages` -- a user's text checked, the title it gives, a message as a store row;
* :mod:`.compose` -- the one place a session and its parts (project, provider, store) are built
  from the settings: every surface opens its sessions through it.
"""

from __future__ import annotations

from .actor import Actor
from .chat_session import ChatSession, turn_start
from .compose import build_provider, connect_project, open_session, open_store
from .hooks import HOOK_NAMES, Hooks

__all__ = [
    "HOOK_NAMES",
    "Actor",
    "ChatSession",
    "Hooks",
    "build_provider",
    "connect_project",
    "open_session",
    "open_store",
    "turn_start",
]
