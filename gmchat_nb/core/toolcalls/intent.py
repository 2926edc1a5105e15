"""The intent stage: who decides a change (``CallScope.origin``), and holding it for them.

* In a chat (``chat``), the mutation intent gate: the user's own words in this turn must ask
  for a change (:mod:`~gmchat_nb.core.guards.intent`); a ``mutate`` call the data or the model
  thought of is refused with ``no_change_requested`` before anyone is asked. Where the gate
  cannot read the language of the user's words (:mod:`~gmchat_nb.core.guards.readable`), its
  silence proves nothing: the change is held for the person instead, confirm-listed or not,
  and its card says that the request could not be read as one.
* An agent's call (``agent``) has no words of a person to read: a person decides it instead,
  when its mutation is confirm-listed (the trust settings).
* A terminal's call (``command``) was typed by the person who runs it: it runs as asked.

A confirm-listed change of a chat or an agent is then *held* (``pending``): the caller opens
its confirmation and brings the person's decision back (:meth:`.ToolCallPipeline.decided`).
"""

from __future__ import annotations

from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["IntentStage"]


class IntentStage(Stage):
    name = "intent"

    def check(self, record: ToolCallRecord, scope: CallScope) -> None:
        prepared = record.prepared
        if prepared is None:  # a read (or a change the access stage did not prepare)
            return
        if scope.origin == "command":
            return
        if scope.origin == "chat":
            refusal = scope.guards.intent_refusal(prepared.mutation, record.args)
            if refusal is not None:
                record.answer(self.name, refusal)
                return
            if scope.guards.intent_unread:
                record.pending = True  # a person reads what the gate could not
                return
        if prepared.mutation in scope.confirm_mutations:
            record.pending = True
