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
  or re-spaced copy of a call is the same call.
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

import hashlib
import json
import math
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..project.tools import TOOLS, is_read_tool

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

_HASH_LENGTH = 16
_MAX_DEPTH = 64  # deeper than any real arguments: beyond it a value is compared by its text


@dataclass(frozen=True, slots=True)
class Budgets:
    """What one turn may use (the settings validate the values; they are only held here)."""

    model_requests: int = 16
    tool_calls: int = 25
    tokens: int = 200_000
    seconds: float = 300.0


DEFAULT_BUDGETS: Final = Budgets()


def _canonical(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data that is the same for equivalent arguments. Dicts keep their
    order: :func:`fingerprint` writes them with sorted keys (where two keys the same once their
    spacing is collapsed leave the later one, as a sort by key kept stable would)."""
    if isinstance(value, str):  # first: most arguments are strings
        return " ".join(value.split())
    if depth > _MAX_DEPTH:
        return " ".join(str(value).split())
    if isinstance(value, float) and not math.isfinite(value):
        return f"<float {value}>"  # NaN and infinities: text, the same each time
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict | Mapping):  # a dict is told without the slower ABC check
        return {_key(key): _canonical(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        members = [_canonical(item, depth + 1) for item in value]
        return sorted(members, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    return " ".join(str(value).split())


def _key(key: Any) -> str:
    return " ".join((key if isinstance(key, str) else str(key)).split())


# Arguments whose plain JSON text is already their canonical text, judged on that text: no
# string with whitespace other than single inner spaces (compact JSON has none of its own, and a
# string starts and ends at a quote), no escape (a line break, a quote), no key that was a number,
# a boolean or None (JSON writes it as a string, as it does a key that is one: either goes the
# long way).
_NOT_CANONICAL: Final = re.compile(r'[^\S ]|\\| {2}|" | "|"(?:[-\d][^"]*|true|false|null)":')


def _not_json(value: Any) -> Any:
    raise TypeError("not plain JSON")  # a set, a date: written by _canonical


def _text(name: str, args: Mapping[str, Any]) -> str:
    """``[name, args]`` as canonical JSON. Most arguments are plain JSON already canonical: the
    C encoder writes them and the text shows it; the rest go through :func:`_canonical` (a
    Python walk, several times slower), which writes the same text for them."""
    try:
        text = json.dumps(
            [name, args],
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,  # NaN and infinities are written as text by _canonical
            default=_not_json,
        )
    except (TypeError, ValueError, RecursionError):  # odd values, a cycle, nesting too deep
        pass
    else:
        # deeper than _MAX_DEPTH, _canonical writes a value as its str(): counted generously
        nested = text.count("[") + text.count("{")
        if nested <= _MAX_DEPTH and _NOT_CANONICAL.search(text) is None:
            return text
    return json.dumps(
        [name, _canonical(args)],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )


def fingerprint(name: str, args: Mapping[str, Any]) -> str:
    """A short sha256 hex of the tool's name and its arguments as canonical JSON: keys sorted,
    strings stripped with their runs of whitespace collapsed, NaN and odd values as text. Equal
    for calls that only differ in key order or spacing; never raises."""
    try:
        text = _text(name, args)
    except RecursionError:  # nested too deep to compare: a call of its own, never a repeat
        return uuid.uuid4().hex[:_HASH_LENGTH]
    # a lone surrogate in the model's arguments is kept as it is, not refused
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]


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
