"""The loop guard: one per turn, it notices a model going round in circles and holds the budgets.

What it is: the loop asks :meth:`LoopGuard.before_call` before running each tool call and
tells :meth:`LoopGuard.after_call` what came back; it tells :meth:`LoopGuard.after_response` of
each model response and asks :meth:`LoopGuard.stop_reason` whether the turn may go on. When it
may not, the loop makes one last request with the tools off (:func:`final_answer_request`) and
says so with :meth:`LoopGuard.stop`. Pure and deterministic: no I/O, no model, the clock given.

Why, and where the design comes from:

* OpenHands' stuck detector: the same action with the same outcome again and again, the same
  error over and over, two actions alternating (A-B-A-B) or empty responses mean the agent is
  stuck; more rounds will not help. Calls are compared by :func:`fingerprint`, so a reordered
  or re-spaced copy of a call is the same call (:mod:`.fingerprint`).
* CrewAI refuses a tool call identical to the previous one ("I tried reusing the same input…")
  — and models then loop on the refusal text. So a refusal alone is not a stop: the second time
  the model ignores one (the fourth identical call) ends the turn. Before refusing, a read called
  a second time gets its earlier result back, marked as a repeat, without running again.
* pydantic-ai's ``UsageLimits``: model requests, tool calls and tokens are counted per turn and
  a turn that reaches a limit stops before the next request (here also wall-clock seconds).
* smolagents at ``max_steps``: a stopped agent still answers — one final request with the tools
  off, asked to write the answer from what it has and say what could not be found — instead of
  ending in an error with nothing to show.

A change the user rejected in this turn is refused if proposed again, word for word; a change
that ran makes every cached read stale, so the cache is cleared.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..project.tools import TOOLS, is_read_tool
from .fingerprint import fingerprint  # the loop guard's callers know it from here too

__all__ = [
    "DEFAULT_BUDGETS",
    "FINAL_ANSWER_REQUEST",
    "STOP_REASONS",
    "Budgets",
    "LoopGuard",
    "StopReason",
    "Verdict",
    "final_answer_request",
    "fingerprint",
]

StopReason = Literal[
    "same_failing_call",
    "repeated_call",
    "alternating",
    "empty_responses",
    "budget_model_requests",
    "budget_tool_calls",
    "budget_tokens",
    "budget_seconds",
]

STOP_REASONS: Final[Mapping[str, str]] = {
    "same_failing_call": "the same tool call failed twice",
    "repeated_call": "the same tool call was made again after it was refused",
    "alternating": "the same two tool calls kept alternating",
    "empty_responses": "two responses in a row were empty",
    "budget_model_requests": "the turn used all its model requests",
    "budget_tool_calls": "the turn used all its tool calls",
    "budget_tokens": "the turn used all its tokens",
    "budget_seconds": "the turn ran out of time",
}
"""Each stop reason (what :meth:`LoopGuard.stop_reason` returns) in plain words."""

FINAL_ANSWER_REQUEST: Final = (
    "Stop calling tools: {reason}. Write the final answer now from the tool results above; "
    "say what could not be found."
)
"""The system message of the one forced final-answer request (tools off); see
:func:`final_answer_request`."""


@dataclass(frozen=True, slots=True)
class Budgets:
    """What one turn may use (the settings validate the values; they are only held here)."""

    model_requests: int = 16
    tool_calls: int = 25
    tokens: int = 200_000
    seconds: float = 300.0


DEFAULT_BUDGETS: Final = Budgets()


def final_answer_request(reason: str) -> str:
    """The system message of the forced final-answer request, saying why in plain words."""
    return FINAL_ANSWER_REQUEST.format(reason=STOP_REASONS.get(reason, reason))


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the loop does with one tool call.

    * ``run``: run it.
    * ``repeat``: do not run it; ``result`` is its earlier result, marked as a repeat.
    * ``refuse``: do not run it; ``result`` is a tool error telling the model what to do instead.
    """

    action: Literal["run", "repeat", "refuse"]
    result: Any = None
    reason: str = ""


_RUN: Final = Verdict("run")


def _repeat_note(name: str) -> str:
    return (
        f"You already called {name} with these arguments in this turn; this is its earlier "
        "result, not run again. Use it, or change the arguments for other data."
    )


def _marked_repeat(name: str, earlier: Any) -> dict[str, Any]:
    note = _repeat_note(name)
    if isinstance(earlier, dict):
        return {**earlier, "repeat": True, "note": note}
    return {"status": "ok", "repeat": True, "note": note, "result": earlier}


def _refusal(code: str, message: str) -> dict[str, Any]:
    return {"status": "error", "code": code, "message": message}


class LoopGuard:
    """One turn's guard: repeats, refusals, stuck patterns and budgets.

    Calls are told apart by :func:`fingerprint`. A read (``is_read_tool``) runs the first time;
    called again after it succeeded it gets its earlier result back (``repeat``), then a refusal
    (``repeated_call``); ignoring that refusal once more stops the turn. A read that failed may be
    retried once (transient errors); failing twice stops the turn. A mutation never repeats from
    the cache; one identical to a change the user rejected in this turn is refused.
    """

    def __init__(
        self, budgets: Budgets = DEFAULT_BUDGETS, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.budgets = budgets
        self._clock = clock
        self._started = clock()
        self._cache: dict[str, Any] = {}  # fingerprint -> a successful read's result
        self._repeated: set[str] = set()  # reads given their cached result once already
        self._pending: Counter[str] = Counter()  # calls let run, their result not yet told
        # id(args) -> (name, args, fingerprint) of a call let run: after_call reads the key made
        # before it instead of making it again (the arguments are held, so the id stays theirs)
        self._running: dict[int, tuple[str, Mapping[str, Any], str]] = {}
        self._failures: Counter[str] = Counter()
        self._refused: Counter[str] = Counter()
        self._rejected: set[str] = set()  # mutations the user rejected in this turn
        self._history: list[str] = []  # every call's fingerprint, in the order asked
        self._requests = 0
        self._tokens = 0
        self._tool_calls = 0
        self._empty_streak = 0
        self._repeats = 0
        self._refusals = 0
        self._stopped: str | None = None

    # -- calls -----------------------------------------------------------------------------------

    def before_call(self, name: str, args: Mapping[str, Any]) -> Verdict:
        """Whether to run one tool call (counted, whatever the verdict), and if not, its result."""
        key = fingerprint(name, args)
        self._tool_calls += 1
        self._history.append(key)
        if not is_read_tool(name):
            if key in self._rejected:
                return self._refuse(
                    key,
                    "rejected_change",
                    "The user rejected exactly this change in this turn; do not propose it "
                    "again. Answer without it, or ask the user what they want changed instead.",
                )
            return self._run(name, args, key)
        if key in self._cache:
            if key not in self._repeated:
                self._repeated.add(key)
                self._repeats += 1
                return Verdict("repeat", _marked_repeat(name, self._cache[key]), "repeat")
            return self._refuse(
                key,
                "repeated_call",
                f"Do not call {name} with these arguments again; use the earlier result or "
                "change the query.",
            )
        if self._failures[key] >= 2:
            return self._refuse(
                key,
                "repeated_call",
                f"Do not call {name} with these arguments again: it failed twice. Read the "
                "error above and change the arguments, or answer with what you have.",
            )
        return self._run(name, args, key)

    def after_call(self, name: str, args: Mapping[str, Any], result: Any, *, failed: bool) -> None:
        """Record what a call that was let run returned: a read's success for the cache, any
        failure for the stuck patterns. Told of a call that was repeated or refused (not run),
        it changes nothing, so the loop may tell it of every call or only of those it ran."""
        running = self._running.pop(id(args), None)
        if running is not None and running[0] == name and running[1] is args:
            key = running[2]
        else:
            key = fingerprint(name, args)
        if self._pending[key] <= 0:
            return
        self._pending[key] -= 1
        if failed:
            self._failures[key] += 1
        elif is_read_tool(name):
            self._cache[key] = result

    def refused_before_running(self, name: str, args: Mapping[str, Any]) -> None:
        """Count a call that failed before its tool could run (bad arguments, an unknown or
        hidden manager: the pipeline's earlier stages answered it) as a call that failed: the
        same mistake made again is the same stuck pattern, whichever stage catches it."""
        key = fingerprint(name, args)
        self._tool_calls += 1
        self._history.append(key)
        self._failures[key] += 1

    def mutation_executed(self) -> None:
        """A change ran: the data changed, so every cached read is stale and identical reads are
        fair again; the call patterns start anew (failures and rejections are kept)."""
        self._cache.clear()
        self._repeated.clear()
        self._history.clear()
        for key in [key for key in self._refused if key not in self._rejected]:
            del self._refused[key]

    def mutation_rejected(self, args: Mapping[str, Any]) -> None:
        """The user rejected the change with these ``mutate`` arguments: never propose it again."""
        self._rejected.add(fingerprint(TOOLS.mutate.name, args))

    def _run(self, name: str, args: Mapping[str, Any], key: str) -> Verdict:
        self._pending[key] += 1
        self._running[id(args)] = (name, args, key)
        return _RUN

    def _refuse(self, key: str, code: str, message: str) -> Verdict:
        self._refused[key] += 1
        self._refusals += 1
        return Verdict("refuse", _refusal(code, message), code)

    # -- responses and stopping ------------------------------------------------------------------

    def after_response(self, *, text: str, calls: int, tokens: int) -> None:
        """Count one model response: a request, its tokens, and whether it was empty (no text,
        no calls)."""
        self._requests += 1
        self._tokens += max(tokens, 0)
        self._empty_streak = self._empty_streak + 1 if not text.strip() and calls <= 0 else 0

    def add_tokens(self, tokens: int) -> None:
        """Count tokens the turn used before this guard was made (a resumed turn's)."""
        self._tokens += max(tokens, 0)

    def stop_reason(self) -> str | None:
        """Why the turn must end with a forced final answer, or ``None`` while it may go on.

        Stuck patterns first (``same_failing_call``, ``repeated_call``, ``alternating``,
        ``empty_responses``), then the budgets (``budget_model_requests``, ``budget_tool_calls``,
        ``budget_tokens``, ``budget_seconds``): a budget is spent once its count reaches it. Once
        :meth:`stop` was called, its reason.
        """
        if self._stopped is not None:
            return self._stopped
        return self._stuck() or self._spent()

    def _stuck(self) -> StopReason | None:
        if any(count >= 2 for count in self._failures.values()):
            return "same_failing_call"
        if any(count >= 2 for count in self._refused.values()):
            return "repeated_call"
        last = self._history[-4:]
        if len(last) == 4 and last[0] == last[2] and last[1] == last[3] and last[0] != last[1]:
            return "alternating"
        if self._empty_streak >= 2:
            return "empty_responses"
        return None

    def _spent(self) -> StopReason | None:
        if self._requests >= self.budgets.model_requests:
            return "budget_model_requests"
        if self._tool_calls >= self.budgets.tool_calls:
            return "budget_tool_calls"
        if self._tokens >= self.budgets.tokens:
            return "budget_tokens"
        if self._clock() - self._started >= self.budgets.seconds:
            return "budget_seconds"
        return None

    @property
    def stopped_by(self) -> str | None:
        """The reason :meth:`stop` was called with, once it was."""
        return self._stopped

    def stop(self, reason: str) -> None:
        """The loop ended the turn with a forced final answer for ``reason`` (the first kept)."""
        if self._stopped is None:
            self._stopped = reason

    def summary(self) -> dict[str, Any]:
        """For the done event and the trace: repeats, refusals, requests and tool calls, and
        ``stopped_by`` once :meth:`stop` was called."""
        summary: dict[str, Any] = {
            "repeats": self._repeats,
            "refusals": self._refusals,
            "requests": self._requests,
            "tool_calls": self._tool_calls,
        }
        if self._stopped is not None:
            summary["stopped_by"] = self._stopped
        return summary
