"""How a turn's run ends in the store: its terminal event written once, even when the store fails;
a turn stopped mid-way closed (or, when its server shuts down, handed to the next server).

Every turn ends with exactly one ``done`` or ``error``, written with everything before it. A
turn waits at its steps for a store that is away for a moment (a database server restarting);
when it cannot wait longer, it ends with ``chat_error``, which is written in the background, with
backoff, as soon as the store can take it: once, and never a second time (every write is fenced
by the turn's ownership, and every close is conditional). A turn whose cancel command was
recorded before its end could be written is closed as ``interrupted`` instead (the store refuses
any other end then: :class:`~gmchat_nb.core.store.TurnCancelRequested`), so a cancel answered
``cancelled`` always tells how the turn ended.
"""

from __future__ import annotations

import logging
from typing import Any

from ..events import Done, Error, error_event
from ..providers.base import Message
from ..store import Admission, TurnCancelRequested, TurnLost
from ..turns import TRANSIENT, TurnOwner, TurnWriter, close_turn, resumable
from .messages import message_row

__all__ = [
    "cancelled_reason",
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


def cancelled_reason(command: str) -> str:
    """The closing note's reason for a turn an explicit cancel stopped."""
    return f"it was cancelled (command {command})"


def _end_or_close(owner: TurnOwner, writer: TurnWriter, terminal: Error) -> None:
    """Write the failure ``terminal``; a turn cancelled meanwhile is closed as interrupted
    instead. Raises what the store raises (a passing failure: try again)."""
    try:
        end_turn(writer, terminal)
    except TurnCancelRequested as cancelled:
        _close_interrupted(owner, writer, cancelled_reason(cancelled.command))


def end_turn_eventually(owner: TurnOwner, writer: TurnWriter, terminal: Error) -> None:
    """End the turn with ``terminal`` (a failure): now if the store takes it, else in the
    background, with backoff, as soon as it does. The writer is let go only once it is written
    (so no sweeper closes the turn a second way meanwhile)."""
    try:
        _end_or_close(owner, writer, terminal)
    except TRANSIENT as error:
        log.warning("turn %s: its end waits for the store (%s)", writer.turn_id, error)
        writer.store_waits(error, "end")
        owner.finish_later(
            lambda: _end_or_close(owner, writer, terminal),
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
    what the store cannot take now is retried in the background. A turn whose cancel command
    is recorded says so in its note, whatever stopped it here."""

    def close() -> None:
        _close_interrupted(owner, writer, reason)

    try:
        close()
    except TurnLost:
        pass
    except TRANSIENT as error:
        log.warning("turn %s: the store failed (%s); closing it later", writer.turn_id, error)
        writer.store_waits(error, "end")
        try:
            owner.finish_later(close, f"the interrupted turn {writer.turn_id}", then=writer.close)
            return  # held until then
        except RuntimeError:  # no running loop left: a sweep closes it
            pass
    except Exception:
        log.exception("could not record the interrupted turn %s", writer.turn_id)
    writer.close()


def _close_interrupted(owner: TurnOwner, writer: TurnWriter, reason: str) -> None:
    """What the turn did so far written, then the turn closed as interrupted (or, its server
    shutting down, a turn that only read released); raises what the store raises."""
    store = writer.owner.store
    writer.flush("running")
    turn = store.turn(writer.conversation_id, writer.turn_id)
    if turn is None or turn.state != "running":
        return
    if owner.stopping and resumable(store, turn):
        owner.release(turn.conversation_id, turn.id)
        return
    if turn.cancel_command is not None:
        reason = cancelled_reason(turn.cancel_command)
    close_turn(store, turn, reason, now=store.now())


def fail_unstarted(owner: TurnOwner, admission: Admission, actor_id: str) -> None:
    """End a turn this process admitted but could not start (its project could not be
    connected) with ``chat_error``, written once."""
    writer = owner.writer(admission.conversation_id, admission.turn_id, actor_id)
    failure = error_event("chat_error").numbered(1)
    assert isinstance(failure, Error)
    end_turn_eventually(owner, writer, failure)
