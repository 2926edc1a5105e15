"""Persistence for conversations: messages, summaries, turns, confirmations, the event journal
and usage counters, in SQLite (the default: a file, or ``":memory:"``) or PostgreSQL (a
``postgresql://`` URL several servers share).

One :class:`ChatStore` owns one connection. Every statement runs under a lock, so a store can be
shared by the kernel's threads and a server's executor; two stores on one file or one database
(two processes, two servers of a hub) are safe too because every write is one transaction under
the engine's single writer lock (``BEGIN IMMEDIATE``, a PostgreSQL advisory lock) and the one
decision that must never be made twice — claiming a mutation confirmation — is a single
conditional ``UPDATE``. Readers never block the writer (WAL mode, PostgreSQL's snapshots).

Unlike GeneralManager's single rolling conversation per user, conversations have ids, and a failed
turn's dangling messages can be removed (:meth:`ChatStore.delete_messages`).

The package is split by table, one module a job:

- :mod:`.schema` — the tables and the schema version (:mod:`.postgresql_schema` — the same as
  PostgreSQL migrations); :mod:`.database` — the connection, its lock and transactions
  (:class:`~.database.Database`) over :mod:`.sqlite_backend` or :mod:`.postgresql_backend`;
  :mod:`.records` — the values handed out;
- :mod:`.conversations`, :mod:`.messages`, :mod:`.journal`, :mod:`.turns`,
  :mod:`.confirmations`, :mod:`.usage`, :mod:`.knowledge`, :mod:`.agent_tokens`,
  :mod:`.retention` — each the methods over its table;
  :mod:`.admission` — a turn's admission and start, one transaction over several tables (the
  decision on the actor's budgets is the caller's, handed in with the start: the store imports
  no policy).

:class:`ChatStore` is one class composed of those per-table mixins (each a
:class:`~.database.Database`) rather than a facade that delegates to per-table objects, because
the store's promises span tables inside *one* transaction: recording a turn writes its messages,
events and lifecycle row together; claiming a confirmation marks its turn running; closing a turn
moves its confirmations. Every mixin therefore shares the one connection, lock and ``_write``
transaction, and the cross-table writes call the owning module's statement helpers (for example
:func:`~.turns.set_turn_state`) on the transaction they are in. Delegation would have repeated
every public signature a second time for no gain in isolation.
"""

from __future__ import annotations

from .admission import Admission, Admissions, TurnBusy, TurnStart, UnknownConversation
from .agent_tokens import AgentTokenRecord, AgentTokenRows
from .confirmations import Confirmations
from .conversations import Conversations
from .database import StoreClosedError, StoreUnavailableError
from .journal import EventJournal
from .knowledge import KnowledgeRecord, KnowledgeRows
from .listing import TurnListings
from .messages import Messages
from .records import (
    CONFIRMATION_STATES,
    DECIDED_VIA,
    TURN_STATES,
    ChangeRecord,
    ConfirmationRecord,
    ConversationRecord,
    StoredMessage,
    TurnRecord,
    TurnSummary,
)
from .retention import Retention
from .schema import SCHEMA_VERSION, StoreVersionError
from .turns import TurnCancelRequested, TurnConflict, TurnLost, Turns, input_hash
from .usage import UsageCounters
from .usage_records import UsageRecords

__all__ = [
    "CONFIRMATION_STATES",
    "DECIDED_VIA",
    "SCHEMA_VERSION",
    "TURN_STATES",
    "Admission",
    "AgentTokenRecord",
    "ChangeRecord",
    "ChatStore",
    "ConfirmationRecord",
    "ConversationRecord",
    "KnowledgeRecord",
    "StoreClosedError",
    "StoreUnavailableError",
    "StoreVersionError",
    "StoredMessage",
    "TurnBusy",
    "TurnCancelRequested",
    "TurnConflict",
    "TurnLost",
    "TurnRecord",
    "TurnStart",
    "TurnSummary",
    "UnknownConversation",
    "input_hash",
]


class ChatStore(
    Conversations,
    Messages,
    Turns,
    TurnListings,
    Admissions,
    EventJournal,
    Confirmations,
    UsageCounters,
    UsageRecords,
    KnowledgeRows,
    AgentTokenRows,
    Retention,
):
    """Conversations, messages, confirmations, the event journal and usage counters.

    ``path`` is a SQLite file (its directory is created), ``":memory:"`` (private to this
    object) or a ``postgresql://`` URL (the database's schema is migrated on open).
    All methods are synchronous and thread-safe. Use as a context manager or call :meth:`close`.
    """
