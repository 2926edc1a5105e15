"""The loop guard's state of agents' calls over MCP: one per actor id, for a time window.

An agent's calls are not a turn: its MCP session (stdio) or its requests (stateless HTTP, where a
token's client may come under another name at each request) go on for as long as it likes. Its
tool-call scope's loop guard state is therefore the actor's, and starts afresh once
``window_seconds`` (the loop guard's ``seconds``, 300 by default) have passed since it began.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..guards.turn import GuardSettings, TurnGuards
from ..settings import ChatSettings

__all__ = ["AgentGuards"]


class AgentGuards:
    """The loop guard's state of agents' calls, one per actor id, each renewed once
    ``window_seconds`` have passed since it began: what a repeat is counted against. The
    server's MCP route keeps one for every toolbox it builds (a client's requests may each come
    under another name of the same user); ``gmchat mcp`` has one toolbox, and so one of these."""

    def __init__(
        self,
        settings: ChatSettings,
        window_seconds: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.window_seconds = window_seconds
        self.clock = clock
        self._guards: dict[str, tuple[float, TurnGuards]] = {}

    def of(self, actor_id: str) -> TurnGuards:
        """The actor's guard state now (a new one when its window has passed)."""
        now = self.clock()
        held = self._guards.get(actor_id)
        if held is not None and now - held[0] < self.window_seconds:
            return held[1]
        for key in [
            k for k, (began, _) in self._guards.items() if now - began >= self.window_seconds
        ]:
            del self._guards[key]  # windows that passed: nothing of them is kept
        guards = TurnGuards(
            GuardSettings(
                loop_guard=self.settings.loop_guard.enabled,
                gates=frozenset(),
                mutation_intent=False,
                flag_results=self.settings.injection.flag_results,
            ),
            (),
        )
        self._guards[actor_id] = (now, guards)
        return guards
