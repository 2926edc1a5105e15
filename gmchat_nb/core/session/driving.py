"""Driving one turn: an engine run (or resumed after a confirmation, or continued after a
crash), every event numbered, journaled and audited, and exactly one terminal event, written
before anyone sees it. A mixin of :class:`~gmchat_nb.core.session.ChatSession`, which sets the
attributes it reads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import AsyncIterator, Sequence

from ..events import (
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    Recall,
    StreamReset,
    TextChunk,
    error_event,
    event_from_dict,
)
from ..knowledge import KnowledgeBook, Recalled, recall
from ..knowledge.suggestions import suggest_correction
from ..planned.catalog import Catalog
from ..project.project import Project, QueryOutcome
from ..providers.base import BaseLLMProvider, Message, ToolDefinition
from ..providers.pricing import turn_cost
from ..store import ConfirmationRecord, TurnCancelRequested, TurnLost, TurnRecord
from ..telemetry import export_trace
from ..trace import TurnTrace
from ..turn_state import Decision, Transport, TurnState
from ..turns import STEP_RETRY_SECONDS, TRANSIENT
from .confirmations import resumed_turn
from .context import bounded_context
from .ending import cancelled_reason, end_turn, end_turn_eventually, interrupt_turn
from .engines import planned_turn, provider_retries, tool_loop, turn_guards, turn_scope
from .turn_io import SessionTurnIO, TurnCancelled

__all__ = ["TAKEN_OVER", "TurnDriving"]

log = logging.getLogger(__package__)

TAKEN_OVER = "This request went on in another server after this one lost contact with the store."


async def _after(first: ChatEvent, events: AsyncIterator[ChatEvent]) -> AsyncIterator[ChatEvent]:
    yield first
    async for event in events:
        yield event


def _after_system(messages: list[Message]) -> int:
    """Where the leading system messages (the prompt, a summary) end."""
    position = 0
    while position < len(messages) and messages[position].role == "system":
        position += 1
    return position


async def refused_turn() -> AsyncIterator[ChatEvent]:
    """A question the ``injection.question: refuse`` setting turns away."""
    yield error_event("input_refused")


class TurnDriving(SessionTurnIO):
    """Runs a turn's engine for the session and journals what it yields."""

    project: Project
    turn_id: str | None
    positions: dict[int, int]
    outcomes: dict[str, QueryOutcome]
    _tools: list[ToolDefinition]
    _mutations: tuple[str, ...]
    _system_prompt: str
    _catalog: Catalog | None
    _role_providers: dict[str, BaseLLMProvider]
    trace: TurnTrace | None  # the last turn's trace (``Chat``'s ``Turn.trace``)
    knowledge: KnowledgeBook

    def recall_mode(self) -> str:
        """How this conversation recalls: its own switch, else the ``knowledge`` setting
        (``on``: by meaning too when the embedding model is installed)."""
        mode = self.settings.knowledge
        if self.conversation_id is not None:
            mode = self.store.conversation_knowledge(self.conversation_id) or mode
        return "hybrid" if mode == "on" else mode

    def _recall(self, user_texts: Sequence[str]) -> Recalled | None:
        """What the knowledge holds for the user's own words of this turn (``None``: recall is
        off or the project has no knowledge, and no ``recall`` event is sent)."""
        mode = self.recall_mode()
        if mode == "off" or self.origin == "agent":  # an agent's change is its own call, relayed
            return None
        question = "\n".join(user_texts)[-4000:]
        try:
            return recall(self.knowledge, question, mode)
        except Exception:  # recall must never cost a turn its answer
            log.exception("knowledge recall failed")
            return Recalled()

    async def _drive(
        self,
        state: TurnState,
        transport: Transport,
        resumed: tuple[ConfirmationRecord, Decision] | None,
        continued: TurnRecord | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Run (or resume, or continue) the loop, numbering, journaling and auditing every
        event.

        Every turn ends with exactly one terminal event (``done`` or ``error``), and that event is
        yielded only after it and everything before it are written, so what a client saw last is
        always in the store. A store that cannot take a write ends the turn with ``chat_error``,
        written as soon as the store can take it (:mod:`.ending`); a turn cancelled from outside
        (a client that went away) is closed as interrupted.
        """
        assert self.conversation_id is not None
        conversation_id = self.conversation_id
        writer = self.turns.writer(conversation_id, state.turn_id, self.actor.id)
        self._writer, self.turn_id = writer, state.turn_id
        self.positions = writer.positions
        # A resumed or continued turn goes on numbering where its journal stopped; a continued
        # one tells readers which of its events the crash cut off (``continues_after``).
        sequence = (
            self.store.last_sequence(conversation_id, state.turn_id) if resumed or continued else 0
        )
        covered = continued.committed_sequence if continued is not None else None
        cut_off = covered if covered is not None and covered < sequence else None
        self.outcomes = {}  # this turn's query evidence, by tool call id
        answer: list[str] = []
        mark = 0  # where the text of the model request now streaming begins
        retries = provider_retries(self.settings)  # the turn's one retry owner and its count
        accounted = 0  # the model requests of retries.served kept as usage records
        trace = self.trace = TurnTrace(conversation_id=conversation_id, turn_id=state.turn_id)
        status = "unfinished"
        ended = ending = False
        handed_over = False
        recalled: Recalled | None = None
        asked: Sequence[str] = ()  # the user's own words of this turn
        try:
            messages = await bounded_context(
                self.store,
                self.provider,
                self,
                conversation_id,
                state,
                system_prompt=self._system_prompt,
                summarize_after=self.settings.summarize_after,
                max_recent=self.settings.max_recent_messages,
                pending_tail=resumed is not None,
                retries=retries,
            )
            guards = turn_guards(self.settings, messages, state)
            asked = guards.user_texts
            recalled = (
                self._recall(guards.user_texts) if resumed is None and continued is None else None
            )
            if recalled is not None and (context := recalled.context()) is not None:
                # after the guards were made: recalled text never counts as the user's words
                messages.insert(_after_system(messages), context)
            if guards.loop is not None:  # a retry's wait counts against the turn's time
                retries.deadline = time.monotonic() + guards.settings.budgets.seconds
            scope = turn_scope(
                self.project,
                self.settings,
                guards,
                mutations=self._mutations,
                actor=self.actor,
                origin=self.origin,
                outcomes=self.outcomes,
                trace=trace,
                audit=self.audit,
                hooks=self.hooks,
                session_key=conversation_id,
                turn_id=state.turn_id,
                settle=self.settle_change,
                checkpoint=self.checkpoint,
            )
            if recalled is not None:
                scope.references = recalled.references
            loop = tool_loop(
                self.project,
                self.provider,
                self._tools,
                self.settings,
                self,
                transport,
                scope,
                retries,
            )
            # a question that tries to override the instructions: refused when the settings say
            # so, else answered as usual but on record (scored only when either needs it)
            asks = guards.settings.question == "refuse" or self.audit.admits("suspicious_question")
            if asks and guards.suspicious_question:
                self.audit.emit(
                    "suspicious_question",
                    {
                        "score": guards.question_score,
                        "reasons": list(guards.question_reasons),
                        "refused": guards.refuses_question,
                        "session_key": conversation_id,
                    },
                )
            events: AsyncIterator[ChatEvent] = (
                refused_turn() if guards.refuses_question else loop.run(messages, state)
            )
            if self._catalog is not None and resumed is None and not guards.refuses_question:
                planned = planned_turn(
                    self.project,
                    self.provider,
                    self.settings,
                    self._catalog,
                    self,
                    state,
                    scope,
                    built=self._role_providers,
                    on_usage=self.record_usage,
                    check_rate=self.check_rate,
                    audit=self.audit,
                    retries=retries,
                )
                events = planned.events(messages, lambda: loop.run(messages, state))
            if resumed is not None:
                events = resumed_turn(loop, messages, state, *resumed)
            if recalled is not None:
                events = _after(Recall(items=recalled.items), events)
            async for event in events:
                sequence += 1
                accounted = self.account(retries.served, accounted)
                if isinstance(event, Done):
                    event = dataclasses.replace(
                        event,
                        attempts=retries.summary(),
                        fallbacks=retries.fallbacks or None,
                        cost=turn_cost(retries.served, self.price_overrides()),
                        trusted=(
                            recalled.trusted(scope.matched_parts, scope.exact_parts)
                            if recalled
                            else None
                        ),
                    )
                numbered = event.numbered(sequence)
                if cut_off is not None:
                    numbered = dataclasses.replace(numbered, continues_after=cut_off)
                    cut_off = None
                if isinstance(event, TextChunk):
                    answer.append(event.content)
                else:
                    if isinstance(event, StreamReset):  # withdrawn text is not the answer
                        del answer[mark:]
                    mark = len(answer)
                if isinstance(numbered, Done | Error):
                    status = numbered.type if isinstance(numbered, Done) else numbered.code
                    ending = True  # written before anyone sees it:
                    end = functools.partial(end_turn, writer, numbered)
                    await writer.write_eventually(end, within=STEP_RETRY_SECONDS)
                    ended = True
                else:
                    writer.event(sequence, numbered.to_dict())
                if isinstance(event, ConfirmMutation):
                    # A confirm request may resume the turn in another process.
                    suspended = transport == "sse"
                    writer.flush("suspended" if suspended else None)
                    ended = suspended
                yield numbered
        except (TurnCancelled, TurnCancelRequested) as cancelled:
            # an explicit cancel, seen between steps, or recorded before the turn's end (or
            # suspension) could be written, which the store then refused: closed like an
            # interrupted turn, and its terminal event told to whoever reads this stream
            interrupt_turn(self.turns, writer, cancelled_reason(cancelled.command))
            handed_over = True
            closing = self.store.events(conversation_id, turn_id=state.turn_id)
            if closing and closing[-1].get("type") == "error":
                yield event_from_dict(closing[-1])
        except TurnLost:
            # another process took the turn over (this one's lease had lapsed): its end is
            # theirs to write; the client here is told the turn went on elsewhere
            log.warning("chat turn %s was taken over by another process", state.turn_id)
            ended = True
            yield error_event("interrupted", message=TAKEN_OVER).numbered(sequence + 1)
        except Exception as error:  # a bug or a failed write: the generic public event
            if ended:
                raise  # the turn already ended; this failure is the caller's to see
            if isinstance(error, TRANSIENT):
                log.warning("chat turn %s: its store failed (%s)", state.turn_id, error)
            else:
                log.exception("chat turn failed")
            self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "turn"})
            # the failure takes the place of an end that could not be written
            failure = error_event("chat_error").numbered(sequence if ending else sequence + 1)
            ended = handed_over = True
            end_turn_eventually(self.turns, writer, failure)
            yield failure
        except (asyncio.CancelledError, GeneratorExit):
            if not ended:
                interrupt_turn(
                    self.turns, writer, "the client went away or the request was cancelled"
                )
                handed_over = True
            raise
        finally:
            self._writer = None
            if not handed_over:
                writer.close()
            trace.finish(status=status)
            export_trace(trace, llm_spans=self.settings.telemetry.llm_spans)
        if answer:
            self.audit.emit(
                "assistant_message",
                {"message": "".join(answer), "session_key": self.conversation_id},
            )
        if status == "done" and recalled is not None:
            try:  # a suggestion waits for a person and is never recalled before
                suggest_correction(self.knowledge, asked)
            except Exception:  # the turn has ended; a suggestion is never worth failing it
                log.warning("knowledge: the correction could not be suggested", exc_info=True)
