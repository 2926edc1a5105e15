"""Closing a turn nobody drives any more: every effect settled honestly, one terminal event.

A process can die mid-turn (kill -9, out of memory, a power cut, a culled hub server) and a
client can go away; either way the turn must not stay open for ever with a question and no
answer. Closing a turn (as durable tool-interaction designs do, never retrying an unknown outcome):

* every tool call without a result gets one: a read is reported as interrupted (it may simply be
  asked again); a mutation whose confirmation was never claimed did not run and says so; a
  mutation that was claimed, or ran without confirmation, has an **unknown outcome** — it may or
  may not have changed the data, so it is never retried automatically, and the result and the
  note tell the model and the user what to check;
* its confirmations move to a final state (``unknown`` for claimed ones);
* an assistant note says what happened, so the next request's context is honest;
* the journal gets the results and one terminal ``error`` event with code ``interrupted``.

All of it is one store transaction that applies only while the turn is still in the state the
closer saw (and, for a lapsed lease, still lapsed), so two processes recovering the same store
close a turn once. A turn that only read and kept its text may instead be run again
(:func:`resumable`).
"""

from __future__ import annotations

from typing import Any, Final

from ..events import ChatEvent, ToolCall, ToolResult, error_event
from ..project.idempotency import mutation_key
from ..project.tools import TOOLS
from ..store import ChatStore, ConfirmationRecord, StoredMessage, TurnRecord

__all__ = ["SERVER_STOPPED", "close_turn", "resumable", "undecidable"]

SERVER_STOPPED: Final = "the process running it stopped"


def resumable(store: ChatStore, turn: TurnRecord) -> bool:
    """Whether a turn its driver left may be run again rather than closed: it was admitted with
    its text kept, nobody cancelled it, and nothing it journaled or stored asked for a data
    change (a mutation's call is written before it runs, so a turn without one only read, and
    reads may be run again). Anything after a possible effect is closed as interrupted."""
    if turn.input is None or turn.cancel_command is not None:
        return False
    if turn.state not in ("accepted", "running"):
        return False
    for event in store.events(turn.conversation_id, turn_id=turn.id):
        if event.get("type") == "confirm_mutation" or (
            event.get("type") == "tool_call" and event.get("name") == TOOLS.mutate.name
        ):
            return False
    return not any(
        call.get("name") == TOOLS.mutate.name for message in _messages_of(store, turn)
        for call in message.tool_calls
    )  # fmt: skip


def close_turn(
    store: ChatStore,
    turn: TurnRecord,
    reason: str,
    *,
    now: float,
    lease_expired_by: float | None = None,
) -> bool:
    """Close one turn as interrupted (see the module docstring); False when it moved on first
    (or, with ``lease_expired_by``, when its owner renewed its lease after all)."""
    messages = _messages_of(store, turn)
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    pending = [
        call
        for message in messages
        if message.role == "assistant"
        for call in message.tool_calls
        if call.get("id") not in answered
    ]
    journal = store.events(turn.conversation_id, turn_id=turn.id)
    sequence = store.last_sequence(turn.conversation_id, turn.id)
    rows: list[dict[str, Any]] = []
    events: list[tuple[int, dict[str, Any]]] = []
    confirmations: dict[str, str] = {}
    unknown: list[str] = []
    # Results stored but never journaled (a mutation that finished as its turn was cancelled):
    # the journal must tell what the store knows.
    announced = {event.get("id") for event in journal if event.get("type") == "tool_call"}
    journaled = {event.get("id") for event in journal if event.get("type") == "tool_result"}
    calls = {str(c.get("id")): c for m in messages if m.role == "assistant" for c in m.tool_calls}

    def journal_result(call_id: str, name: str, result: Any) -> None:
        """A result for the journal, after its call when the call was never announced (calls
        that run one after another are announced as each starts)."""
        nonlocal sequence
        found: list[ChatEvent] = []
        if call_id not in announced:
            args = calls.get(call_id, {}).get("args")
            found.append(
                ToolCall(id=call_id, name=name, args=args if isinstance(args, dict) else {})
            )
        found.append(ToolResult(id=call_id, name=name, result=result))
        for event in found:
            sequence += 1
            events.append((sequence, event.numbered(sequence).to_dict()))

    for message in messages:
        if message.role == "tool" and message.tool_call_id not in journaled:
            journal_result(str(message.tool_call_id), str(message.tool_name), message.tool_result)
    for call in pending:
        result, settled = _settle(store, turn, call, now)
        if settled is not None:
            confirmations[str(call["id"])] = settled
        if result.get("status") == "unknown":
            unknown.append(str(result.get("mutation") or "the mutation"))
        rows.append(
            {
                "role": "tool",
                "tool_call_id": str(call["id"]),
                "tool_name": str(call["name"]),
                "tool_result": result,
            }
        )
        journal_result(str(call["id"]), str(call["name"]), result)
    note = _note(reason, unknown)
    rows.append({"role": "assistant", "content": f"({note})"})
    sequence += 1
    terminal = error_event("interrupted", message=note).numbered(sequence)
    events.append((sequence, terminal.to_dict()))
    return store.close_turn(
        turn.conversation_id,
        turn.id,
        expect_state=turn.state,
        expect_owner=turn.owner,
        final_state="interrupted",
        messages=rows,
        events=events,
        confirmations=confirmations,
        lease_expired_by=lease_expired_by,
    )


def undecidable(store: ChatStore, turn: TurnRecord, now: float) -> bool:
    """Whether a suspended turn has no confirmation left that can still be confirmed."""
    for message in _messages_of(store, turn):
        for call in message.tool_calls:
            record = _confirmation_of(store, turn, call)
            if record is not None and (
                record.state == "claimed" or (record.state == "pending" and record.expires_at > now)
            ):
                return False
    return True


def _settle(
    store: ChatStore, turn: TurnRecord, call: dict[str, Any], now: float
) -> tuple[dict[str, Any], str | None]:
    """The result an unfinished call gets, and the final state of its confirmation (if any)."""
    name = str(call.get("name"))
    if name != TOOLS.mutate.name:
        return {
            "status": "error",
            "code": "interrupted",
            "message": f"This {name} call did not finish because the request was interrupted; "
            "call it again if you still need it.",
        }, None
    args: dict[str, Any] = call["args"] if isinstance(call.get("args"), dict) else {}
    mutation = str(args.get("mutation") or "the mutation")
    record = _confirmation_of(store, turn, call)
    if record is not None and (
        record.state == "expired" or (record.state == "pending" and record.expires_at <= now)
    ):
        result = {"status": "cancelled", "reason": "confirmation_timed_out", "mutation": mutation}
        return result, "expired"
    if record is not None and record.state == "pending":
        result = {
            "status": "cancelled",
            "reason": "interrupted",
            "mutation": mutation,
            "message": f"{mutation} was not run: the request was interrupted before anyone "
            "confirmed it.",
        }
        return result, "expired"
    if record is not None and record.state in ("rejected", "executed", "failed", "unknown"):
        return _recorded_outcome(record.state, mutation), None
    input_value = args.get("input")
    key = mutation_key(
        turn.id, str(call.get("id")), mutation, input_value if isinstance(input_value, dict) else {}
    )
    return _unknown_outcome(mutation, input_value, key), "unknown" if record else None


def _unknown_outcome(mutation: str, input_value: Any, key: str | None = None) -> dict[str, Any]:
    message = (
        f"The request was interrupted while {mutation} was being run, so whether it changed the "
        "data is unknown. It will not be retried automatically: query the data to see whether "
        "the change is there before trying again."
    )
    outcome: dict[str, Any] = {
        "status": "unknown",
        "code": "unknown_outcome",
        "mutation": mutation,
        "input": input_value if isinstance(input_value, dict) else {},
        "message": message,
    }
    if key is not None:  # the attempt was sent with this Idempotency-Key: the server can tell
        outcome["idempotency_key"] = key
        outcome["message"] = f"{message} The attempt was sent with Idempotency-Key {key}."
    return outcome


def _recorded_outcome(state: str, mutation: str) -> dict[str, Any]:
    """A confirmation reached its final state, but the tool result was lost with the process."""
    if state == "rejected":
        return {"status": "cancelled", "reason": "user_rejected", "mutation": mutation}
    if state == "unknown":
        return _unknown_outcome(mutation, None)
    return {
        "status": "executed" if state == "executed" else "error",
        "code": "reply_lost" if state == "executed" else "mutation_failed",
        "mutation": mutation,
        "message": f"{mutation} {'ran' if state == 'executed' else 'failed'}, but its reply was "
        "lost when the request was interrupted; query the data for details.",
    }


def _note(reason: str, unknown: list[str]) -> str:
    note = f"This request was interrupted before it finished: {reason}."
    if unknown:
        names = ", ".join(dict.fromkeys(unknown))
        note += (
            f" Whether {names} changed the data is unknown; it was not retried. Check the data "
            "before asking for the change again."
        )
    return note


def _messages_of(store: ChatStore, turn: TurnRecord) -> list[StoredMessage]:
    return store.messages(turn.conversation_id, turn_id=turn.id)


def _confirmation_of(
    store: ChatStore, turn: TurnRecord, call: dict[str, Any]
) -> ConfirmationRecord | None:
    """The confirmation of this call in this turn (a later turn may reuse a provider's call id)."""
    record = store.confirmation(turn.conversation_id, str(call.get("id")))
    if record is None or record.turn_state.get("state", {}).get("turn_id") not in (None, turn.id):
        return None
    return record
