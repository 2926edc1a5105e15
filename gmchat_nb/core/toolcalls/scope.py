"""What the stages of one caller's tool calls share, and for how long (the *scope*).

A stage keeps nothing of its own: the loop guard's fingerprints and budgets, the flags of what
was read, the query results a chart may draw, the trace and the lock live in a
:class:`CallScope`, which its caller makes and keeps for as long as its calls belong together:

* ``turn`` -- one chat turn, whichever engine runs it. The tool loop, a planned turn's tasks
  (which run concurrently: their calls share the scope's one lock, so the loop guard's budgets
  are the turn's) and a mutation plan handed to the loop share one scope. A turn resumed after
  a confirmation or taken over after a crash gets a scope rebuilt from the turn's own messages
  (:meth:`~gmchat_nb.core.guards.turn.TurnGuards.replay`): the same fingerprints, counts and
  flags.
* ``agent`` -- an agent's calls over MCP: one scope per MCP session on stdio, and over stateless
  HTTP one per actor for a time window (``core/agent/toolbox.py``). Its changes run as turns,
  each with a turn scope of its own.
* ``command`` -- one ``gmchat tool`` call from a terminal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..audit import AuditLog
from ..charts.turn import TurnCharts
from ..guards.turn import GuardSettings, TurnGuards
from ..project.tools import ToolRun
from ..providers.base import ToolCallEvent
from ..trace import TurnTrace

if TYPE_CHECKING:
    from ..project.mutations import PreparedMutation
    from ..project.project import Project, QueryOutcome

__all__ = [
    "CallScope",
    "HookSink",
    "Origin",
    "ReferenceCall",
    "ScopeKind",
    "ToolExecutor",
]

ScopeKind = Literal["turn", "agent", "command"]
Origin = Literal["chat", "agent", "command"]
"""Who asks for the scope's changes, which says who decides them (the intent stage):

* ``chat`` -- a model in a person's chat: the person's own words in the turn must ask for a
  change (the mutation intent gate), then a confirm-listed change waits for their Confirm;
* ``agent`` -- an agent over MCP: there are no words of a person to read, so a confirm-listed
  change waits for a person (in the agent's host, the widget, the panel or ``confirm/``);
* ``command`` -- the person at a terminal typed the call (``gmchat tool``): it runs as asked.
"""

ToolExecutor = Callable[[str, dict[str, Any]], Awaitable[ToolRun]]
"""Runs one tool call (``name``, ``args``): the project's tools, or a stubbed world's."""


class HookSink(Protocol):
    """The caller's hooks (``tool_called``, ``mutation_executed``); a hook never breaks a call."""

    def fire(self, name: str, **payload: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class ReferenceCall:
    """A call known to answer a question (a verified query's ``part``-th query call): the
    reference stage marks an executed call of the same shape (see :mod:`.reference`) with its
    ``id``."""

    id: str
    name: str
    args: Mapping[str, Any]
    part: int = 0


@dataclass(slots=True, eq=False)
class CallScope:
    """The shared state and the caller's services for one scope's calls (see the module)."""

    kind: ScopeKind
    project: Project | None
    guards: TurnGuards = field(default_factory=lambda: TurnGuards(GuardSettings.off(), ()))
    origin: Origin = "chat"
    authenticated: bool = True
    actor: Any = None
    """Who calls, as the hooks receive it."""
    allowed_mutations: frozenset[str] = frozenset()
    confirm_mutations: frozenset[str] = frozenset()
    offered: tuple[str, ...] | None = None
    """The tool names this caller is offered, in order (``None``: the registry's and the
    project's); a call of another name is an unknown tool, named with the offered ones only."""
    charts: TurnCharts | None = None
    outcomes: dict[str, QueryOutcome] = field(default_factory=dict)
    """The scope's query results by call id (what a chart draws, what a turn's evidence is)."""
    trace: TurnTrace | None = None
    """The turn's trace; a scope without one (agents, commands) exports each call's own."""
    audit: AuditLog | None = None
    hooks: HookSink | None = None
    session_key: str | None = None
    """The audit records' ``session_key`` (the conversation's id)."""
    admit: Callable[[], dict[str, Any] | None] | None = None
    """A budget asked before each call (an agent's ``requests``): an error result refuses it."""
    settle: Callable[[ToolCallEvent, ToolRun], None] | None = None
    """The caller's record of how a change ended (its confirmation settled in the store)."""
    mutation_key: Callable[[ToolCallEvent, PreparedMutation], str] | None = None
    """A change's idempotency key (the turn's and the call's identity)."""
    checkpoint: Callable[[], Awaitable[None]] | None = None
    """Writes what the caller has so far, before a change runs (it is then on record)."""
    execute: ToolExecutor | None = None
    """Runs the tool (``None``: the project's own tools, ``run_tool``)."""
    references: tuple[ReferenceCall, ...] = ()
    matched: dict[str, str] = field(default_factory=dict)
    """Call id -> the id of the reference call it matched (the reference stage)."""
    matched_parts: set[tuple[str, int]] = field(default_factory=set)
    """``(id, part)`` of every reference call some executed call matched."""
    exact_parts: set[tuple[str, int]] = field(default_factory=set)
    """Those of :attr:`matched_parts` an executed call re-ran with the very same arguments."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held around each call's way through the stages by a caller whose calls run concurrently
    (a planned turn's tasks: ``ToolCallPipeline(scope, serial=True)``)."""
