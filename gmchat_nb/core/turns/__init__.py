"""Turns: who runs each one, under what lease, how it ends once, and how it is followed.

- :mod:`.owner` — :class:`TurnOwner`, the one owner of a turn's life in a process: admission,
  holding and leases, cancel, take-over, closing and following; every surface goes through it.
- :mod:`.writer` — :class:`TurnWriter`, a turn's queued writes: grouped, fenced, retried.
- :mod:`.outage` — a store that cannot take a turn's writes, told to its live followers as a
  ``notice`` of kind ``store``.
- :mod:`.closing` — closing a turn nobody drives, its effects settled honestly.
- :mod:`.identity` — this process as an owner, and the scopes of servers that may take over.

Surfaces see turns here and through :mod:`gmchat_nb.core.session`, never in the store: this
package also hands them what they read of a turn and its conversation (the records, a decided
change's record, the admission, the turn states, the errors an admission or a store outage raises, and the store's
type for their hints), re-exported from :mod:`gmchat_nb.core.store`.
"""

from __future__ import annotations

from ..store import (
    Admission,
    ChangeRecord,
    ChatStore,
    ConversationRecord,
    StoreUnavailableError,
    TurnBusy,
    TurnConflict,
    TurnLost,
    TurnRecord,
    TurnStart,
    TurnSummary,
    UnknownConversation,
)
from ..store.records import FINAL_TURN_STATES, JournalEntry
from .closing import SERVER_STOPPED, close_turn, resumable
from .identity import OWNER, kernel_scope, server_scope
from .outage import STORE_CODES, store_problem
from .owner import EXPIRED, LEASE_SECONDS, TurnOwner, new_turn_id
from .writer import GROUP_SECONDS, STEP_RETRY_SECONDS, TRANSIENT, TurnWriter

__all__ = [
    "EXPIRED",
    "FINAL_TURN_STATES",
    "GROUP_SECONDS",
    "LEASE_SECONDS",
    "OWNER",
    "SERVER_STOPPED",
    "STEP_RETRY_SECONDS",
    "STORE_CODES",
    "TRANSIENT",
    "Admission",
    "ChangeRecord",
    "ChatStore",
    "ConversationRecord",
    "JournalEntry",
    "StoreUnavailableError",
    "TurnBusy",
    "TurnConflict",
    "TurnLost",
    "TurnOwner",
    "TurnRecord",
    "TurnStart",
    "TurnSummary",
    "TurnWriter",
    "UnknownConversation",
    "close_turn",
    "kernel_scope",
    "new_turn_id",
    "resumable",
    "server_scope",
    "store_problem",
]
