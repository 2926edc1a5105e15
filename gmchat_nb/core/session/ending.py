"""How a turn's run ends in the store: its terminal event written once, even when the store fails;
a turn stopped mid-way closed (or, when its server shuts down, handed to the next server).

Every turn ends with exactly one ``done`` or ``error``, written with everything before it. A
turn waits at its steps for a store that is away for a moment (a database server restarting);
when it cannot wait longer, it ends with ``chat_error``, which is written in the background, with
backoff, as soon as the store can take it: once, and never a second time (every write is fenced
by the turn's ownership, and every close is conditional).
"""

from __future__ import annotations

import logging
from typing import Any

from ..events import Done, Error, error_event
from ..providers.base import Message
from ..store import Admission, TurnLost
from ..turns import TRANSIENT, TurnOwner, TurnWriter, close_turn, resumable
from .messages import message_row

__all__ = [
    "end_turn",
    "end_turn_eventually",
    "fail_unstarted",
    "interrupt_turn",
]

log = logging.getLogger(__package__)


def _note(terminal: Done | Error) -> dict[str, Any] | None:
    """The assistant note a failed turn leaves, so the next request's context is honest."""
    if isinstance(terminal, Done) or terminal.code == "confirmation_required_transport":
        return None
    return message_row(
        Message("assistant", f"(This request ended without an answer: {terminal.code}.)")
    )


def end_turn(writer: TurnWriter, terminal: Done | Error) -> None:
    """Write the turn's end with everything still queued, in one transaction; raises when the
    store cannot take it (nothing of it is lost: the caller ends it another way)."""
    assert terminal.sequence is not None
    writer.flush(
        "done" if isinstance(terminal, Done) else "failed",
        end=(terminal.sequence, terminal.to_dict()),
        note=_note(terminal),
    )


def end_turn_eventually(owner: TurnOwner, writer: TurnWriter, terminal: Error) -> None:
    """End the turn with ``terminal`` (a failure): now if the store takes it, else in the
    background, with backoff, as soon as it does. The writer is let go only once it is written
    (so no sweeper closes the turn a second way meanwhile)."""
    try:
        end_turn(writer, terminal)
    except TRANSIENT as error:
        log.warning("turn %s: its end waits for the store (%s)", writer.turn_id, error)
        owner.finish_later(
            lambda: end_turn(writer, terminal),
            f"the end of turn {writer.turn_id}",
            then=writer.close,
        )
        return
    except TurnLost:
        pass
    except Exception:
        log.exception("could not write the end of turn %s", writer.turn_id)
    writer.close()


def interrupt_turn(owner: TurnOwner, writer: TurnWriter, reason: str) -> None:
    """Close a turn stopped mid-way: what it did so far is written, then it is closed as
    interrupted like a turn whose process died. A server shutting down instead hands a turn
    that only read to the next server that may run it. Never raises (it runs while unwinding);
    what the store cannot take now is retried in the background."""
    store = writer.owner.store

    def close() -> None:
        writer.flush("running")
        turn = store.turn(writer.conversation_id, writer.turn_id)
        if turn is None or turn.state != "running":
            return
        if owner.stopping and resumable(store, turn):
            owner.release(turn.conversation_id, turn.id)
            return
        close_turn(store, turn, reason, now=store.now())

    try:
        close()
    except TurnLost:
        pass
    except TRANSIENT as error:
        log.warning("turn %s: the store failed (%s); closing it later", writer.turn_id, error)
        try:
            owner.finish_later(close, f"the interrupted turn {writer.turn_id}", then=writer.close)
            return  # held until then
        except RuntimeError:  # no running loop left: a sweep closes it
            pass
    except Exception:
        log.exception("could not record the interrupted turn %s", writer.turn_id)
    writer.close()


def fail_unstarted(owner: TurnOwner, admission: Admission, actor_id: str) -> None:
    """End a turn this process admitted but could not start (its project could not be
    connected) with ``chat_error``, written once."""
    writer = owner.writer(admission.conversation_id, admission.turn_id, actor_id)
    failure = error_event("chat_error").numbered(1)
    assert isinstance(failure, Error)
    end_turn_eventually(owner, writer, failure)
