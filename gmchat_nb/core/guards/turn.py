"""One scope's defences in one object: what the tool-call pipeline's stages and the engines
consult.

The tool-call pipeline (``core/toolcalls/``: its loop guard, intent and scan stages) and the
engines (``core/loop.py``, ``core/planned/``) stay free of state; :class:`TurnGuards` holds what
the defences need to remember over a turn (or an agent's time window) and answers their few
questions:

* before a tool call: run it, answer it from the earlier identical call (a repeat), or refuse it
  (:mod:`.loop_guard`); a ``mutate`` call is refused unless the user's own words in this turn
  ask for a change (:mod:`.intent`), or when it is the change the user already rejected;
* after a result: the flags of suspicious text in it (:mod:`.scorer`), kept for the tool card,
  the trace and the confirmation card's warning;
* after a response: whether the turn is stuck or over a budget (one final answer, tools off);
* on the answer: the completion gates (:mod:`.gates`), one correction at most;
* on a resume or a take-over: :meth:`TurnGuards.replay` rebuilds all this from the turn's own
  messages.

Everything here is deterministic and cheap; settings switch each part off.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..project.tools import TOOLS, is_read_tool
from .gates import GATES, GateResult, MutationFact, TurnFacts, check_answer
from .intent import Intent, read_intent, values_from_data
from .loop_guard import Budgets, LoopGuard, Verdict
from .scorer import question_score, result_text, scan

__all__ = ["DECLINED", "ENDED_AS", "GuardSettings", "TurnGuards"]

NO_CHANGE_REQUESTED = (
    "No change was requested: the user's messages in this turn do not ask to change data, so "
    "{mutation} was not proposed. Answer the question from the tool results; if a change seems "
    "useful, say so in the answer and let the user ask for it."
)


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """Which defences are on (the ``loop_guard``, ``completion_gates`` and ``injection``
    settings, read once per turn)."""

    loop_guard: bool = True
    budgets: Budgets = field(default_factory=Budgets)
    gates: frozenset[str] = frozenset(GATES)
    mutation_intent: bool = True
    flag_results: bool = True
    question: str = "log"  # or "refuse": a question that tries to override the instructions
    question_threshold: float = 0.5

    @classmethod
    def off(cls) -> GuardSettings:
        """Every defence off (a loop built without a session's settings)."""
        return cls(loop_guard=False, gates=frozenset(), mutation_intent=False, flag_results=False)


_RUN = Verdict("run")
DECLINED: Final[Mapping[str, str]] = {
    "rejected": "user_rejected",
    "timed_out": "confirmation_timed_out",
}
"""A change a person did not let run (its decision) -> the ``reason`` its cancelled result gives."""
ENDED_AS: Final[Mapping[str, str]] = {reason: decision for decision, reason in DECLINED.items()}
"""A cancelled change's ``reason`` -> how it ended (the decision, :data:`DECLINED` reversed)."""


class TurnGuards:
    """The defences of one turn; ``user_texts`` are the user's own messages of the turn."""

    def __init__(
        self, settings: GuardSettings, user_texts: Sequence[str], context: Sequence[Any] = ()
    ) -> None:
        self.settings = settings
        self.user_texts = tuple(user_texts)
        self.context = tuple(context)  # earlier results and answers: grounds for follow-ups
        self.loop = LoopGuard(settings.budgets) if settings.loop_guard else None
        self.results: list[Any] = []
        self.texts: list[str] = []  # each result's distinct texts, for the scan and the gates
        self.data_calls = 0
        self.data_rows = 0
        self.mutations: list[MutationFact] = []
        self.flagged = 0  # fields flagged in this turn's results
        self.gate_results: list[GateResult] = []
        self._intent: Intent | None = None  # read on the first mutate call
        self._question: tuple[float, tuple[str, ...]] | None = None  # scored when first asked

    @property
    def question_score(self) -> float:
        """How strongly the user's words try to override the assistant's instructions."""
        return self._scored()[0]

    @property
    def question_reasons(self) -> tuple[str, ...]:
        """Why the question scores as it does."""
        return self._scored()[1]

    def _scored(self) -> tuple[float, tuple[str, ...]]:
        if self._question is None:
            score, reasons = question_score("\n".join(self.user_texts))
            self._question = (score, tuple(reasons))
        return self._question

    @property
    def suspicious_question(self) -> bool:
        """Whether the question scores as an attempt to override the instructions."""
        return self.question_score > 0 and self.question_score >= self.settings.question_threshold

    @property
    def refuses_question(self) -> bool:
        """Whether the settings make a suspicious question a refusal (``input_refused``)."""
        return self.settings.question == "refuse" and self.suspicious_question

    # -- tool calls ------------------------------------------------------------------------------

    def before_call(self, name: str, args: Mapping[str, Any]) -> Verdict:
        """Run the call, answer it from an earlier one (``repeat``) or refuse it."""
        if self.loop is None:
            return _RUN
        return self.loop.before_call(name, args)

    def record_call(self, name: str, args: Mapping[str, Any], result: Any, *, failed: bool) -> None:
        """Tell the loop guard what a call that ran returned (its cache, its stuck patterns)."""
        if self.loop is not None:
            self.loop.after_call(name, args, result, failed=failed)

    def refused_before_running(self, name: str, args: Mapping[str, Any]) -> None:
        """A call an earlier check answered as failed, for the loop guard's counts."""
        if self.loop is not None:
            self.loop.refused_before_running(name, args)

    def scan_result(self, name: str, result: Any, *, failed: bool) -> list[dict[str, Any]]:
        """Note a read's result (for the gates); the flags of suspicious text in it
        (``Flag.to_dict()``s)."""
        self.results.append(result)
        if name == TOOLS.query.name:
            self.data_calls += 1
            rows = result.get("data") if isinstance(result, Mapping) else None
            self.data_rows += len(rows) if isinstance(rows, list) else 0
        text = result_text(result) if self.settings.gates or self.settings.flag_results else None
        if text is not None:
            self.texts.append(text)
        if not self.settings.flag_results:
            return []
        flags = [flag.to_dict() for flag in scan(result, text=text)]
        if failed:  # an error's own words name other tools: only the rest is suspicious
            flags = [
                {**flag, "reasons": [r for r in flag["reasons"] if r != "tool_name"]}
                for flag in flags
                if any(r != "tool_name" for r in flag["reasons"])
            ]
        self.flagged += len(flags)
        return flags

    def intent_refusal(self, mutation: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The tool error that stops a ``mutate`` call before anyone is asked when no change
        was requested in the user's words (the mutation intent gate), else ``None``."""
        if not self.settings.mutation_intent or self._read_intent() != "not_asked":
            return None
        self.mutations.append(MutationFact(mutation, "refused", dict(args)))
        return {
            "status": "error",
            "code": "no_change_requested",
            "message": NO_CHANGE_REQUESTED.format(mutation=mutation),
        }

    @property
    def intent_unread(self) -> bool:
        """Whether the intent gate cannot read the language of the user's words (and they do
        not ask or refuse a change in one it reads): a change the model proposes then goes to
        the person to decide, with a note on its card, instead of being refused."""
        return self.settings.mutation_intent and self._read_intent() == "unread"

    def _read_intent(self) -> Intent:
        if self._intent is None:
            self._intent = read_intent(self.user_texts)
        return self._intent

    def note_refused_change(self, args: Mapping[str, Any]) -> None:
        """A ``mutate`` call the loop guard refused (a change the user rejected in this turn)."""
        mutation = args.get("mutation")
        self.mutations.append(MutationFact(str(mutation), "refused", dict(args)))

    def provenance(self, mutation_input: Mapping[str, Any]) -> dict[str, Any]:
        """For the confirmation card: the input values that are not in the user's words (they
        came from data or the model), whether flagged data was read in this turn, and
        (``request_unread``, only when so) that the user's words are in a language the intent
        gate cannot read, so nothing checked that they ask for this change."""
        provenance: dict[str, Any] = {
            "from_data": values_from_data(mutation_input, self.user_texts),
            "flagged_data_read": self.flagged > 0,
        }
        if self.intent_unread:
            provenance["request_unread"] = True
        return provenance

    def mutation_ended(
        self, mutation: str, args: Mapping[str, Any], status: str, mutation_input: Any = None
    ) -> None:
        """How a proposed change ended: ``executed``, ``rejected``, ``timed_out``, ``failed``
        (a ``confirmed`` decision is reported again as what its execution did)."""
        if status == "confirmed":
            return
        fact_input = mutation_input if isinstance(mutation_input, Mapping) else {}
        self.mutations.append(MutationFact(mutation, status, dict(fact_input)))  # type: ignore[arg-type]  # one of the statuses above
        if self.loop is None:
            return
        if status == "executed":
            self.loop.mutation_executed()
        elif status == "rejected":
            self.loop.mutation_rejected(args)

    def replay(self, messages: Sequence[Any], tokens: int = 0) -> int:
        """Rebuild what the defences knew of a turn from its own messages so far (a turn
        resumed after a confirmation, or taken over after a crash, runs on with the same
        fingerprints, cached reads, counts and flags): each response counted, each call asked
        of the loop guard again (which gives the same verdicts for the same calls), each result
        of a call that ran told to it and scanned, each change's ending noted. ``tokens``: what
        the turn has used so far. Returns how many model responses were replayed."""
        results = {
            m.tool_call_id: m.tool_result for m in messages if getattr(m, "role", "") == "tool"
        }
        responses = 0
        for message in messages:
            calls = getattr(message, "tool_calls", ()) if message.role == "assistant" else ()
            if not calls:
                continue
            responses += 1
            self.after_response(text=message.content or "", calls=len(calls), tokens=0)
            for call in calls:
                if call.id not in results:  # a change waiting for its decision: counted now,
                    self.before_call(call.name, call.args)  # its ending told when decided
                    continue
                self._replay_call(call.name, call.args, results[call.id])
        if self.loop is not None:
            self.loop.add_tokens(tokens)
        return responses

    def _replay_call(self, name: str, args: Mapping[str, Any], result: Any) -> None:
        failed = isinstance(result, Mapping) and result.get("status") == "error"
        verdict = self.before_call(name, args) if self.loop is not None else _RUN
        if name == TOOLS.mutate.name:
            status = result.get("status") if isinstance(result, Mapping) else None
            reason = result.get("reason") if isinstance(result, Mapping) else None
            ended = {"executed": "executed", "cancelled": ENDED_AS.get(str(reason))}.get(
                str(status), "failed" if verdict.action == "run" and failed else None
            )
            if ended is not None:
                mutation = str(args.get("mutation"))
                self.mutation_ended(mutation, args, ended, args.get("input"))
            return
        if verdict.action != "run" or not isinstance(result, Mapping | list | str | int | float):
            return
        self.record_call(name, args, result, failed=failed)
        if is_read_tool(name):
            self.scan_result(name, result, failed=failed)

    # -- responses -------------------------------------------------------------------------------

    def after_response(self, *, text: str, calls: int, tokens: int) -> None:
        """Count a model response (requests, tokens, empty responses)."""
        if self.loop is not None:
            self.loop.after_response(text=text, calls=calls, tokens=tokens)

    def stop_reason(self) -> str | None:
        """Why the turn must end now with one final answer (stuck, or a budget spent)."""
        return None if self.loop is None else self.loop.stop_reason()

    @property
    def stopped_by(self) -> str | None:
        """Why the loop guard stopped the turn, once it did (:meth:`stopped`)."""
        return None if self.loop is None else self.loop.stopped_by

    def stopped(self, reason: str) -> None:
        if self.loop is not None:
            self.loop.stop(reason)

    # -- the answer ------------------------------------------------------------------------------

    def check_answer(self, answer: str) -> list[GateResult]:
        """The completion gates' verdicts on ``answer`` (kept for the ``done`` event)."""
        if not self.settings.gates:
            return []
        self.gate_results = check_answer(answer, self.facts(), self.settings.gates)
        return self.gate_results

    def facts(self) -> TurnFacts:
        return TurnFacts(
            user_texts=self.user_texts,
            results=tuple(self.results),
            data_calls=self.data_calls,
            data_rows=self.data_rows,
            mutations=tuple(self.mutations),
            context=self.context,
            texts=tuple(self.texts) if len(self.texts) == len(self.results) else (),
        )

    def tools_for_correction(self, names: Collection[str]) -> set[str]:
        """The tools a corrective request may offer: never ``mutate``."""
        return {name for name in names if name != TOOLS.mutate.name}

    def summary(self) -> dict[str, Any] | None:
        """``done.guards``: what the loop guard and the scorer did, when anything happened."""
        summary: dict[str, Any] = {}
        if self.loop is not None:
            loop = self.loop.summary()
            if loop.get("repeats") or loop.get("refusals") or loop.get("stopped_by"):
                summary.update(loop)
        if self.flagged:
            summary["flagged"] = self.flagged
        refused = sum(fact.status == "refused" for fact in self.mutations)
        if refused:
            summary["mutations_refused"] = refused
        return summary or None

    def gates_summary(self) -> list[dict[str, Any]] | None:
        return [result.to_dict() for result in self.gate_results] or None
