"""Completion gates: a final answer checked, deterministically, against what the turn's tools did.

Nothing else holds the model's answer to what happened. Each gate is a pure function of the answer
and the turn's :class:`TurnFacts`; a failed gate yields one corrective message for the model
(:func:`correction_request`), and an answer failing again gets a footnote (:func:`warning_note`).

* ``phantom_write`` catches "I have updated the supplier", "The email has been changed", "Done."
  while no mutation of the turn was executed (rejected, timed out, failed, refused, pending, or
  none proposed): people act on such a sentence. Proposals, questions, conditionals, negations,
  reports of a rejection and past-tense history of the data ("created in 2021") pass. Beside an
  executed mutation only a claim of a kind (create, update, delete) never executed fails.
* ``grounded_numbers`` catches invented numbers: each must be in the tool results or the user's
  words, or follow simply from them (rounded to the answer's precision, a column's sum or
  average, a row count, a difference, ratio or percentage of two comparable facts, what an
  analyst derives from rows -- :mod:`.derived`: products within a row and their sums, a group's
  sum or mean -- or a sum of the answer's own accepted figures). Small counts (0-10), years,
  dates, times, ordinals, list markers and ids are not checked. Most answers state numbers as
  the results write them, which is checked first on the results' distinct texts; facts are
  capped and pairs searched by bisection, so a large result costs milliseconds.
* ``empty_data`` catches findings reported over nothing, as models fill an empty result with
  plausible rows: every data call failed or came back empty, yet the answer gives numbers nobody
  gave, a list of items, or assertions without saying that nothing was found.

Over 400 lines: the three gates share the reading of an answer (its sentences, its numbers in
every notation) and of the facts; split apart, each gate would carry half of that reading.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .derived import as_number, row_figures, stated_sum
from .intent import asks_for_change
from .leaves import leaf_text

__all__ = ["GATES", "GateResult", "MutationFact", "TurnFacts", "check_answer"]
__all__ += ["correction_request", "warning_note"]


@dataclass(frozen=True, slots=True)
class MutationFact:
    """One proposed change of the turn and how it ended."""

    mutation: str  # e.g. "updateSupplier"
    status: Literal["executed", "rejected", "timed_out", "failed", "pending", "refused"]
    input: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What the turn's tools did, as the gates see it."""

    user_texts: tuple[str, ...]
    results: tuple[Any, ...]  # every data tool result (JSON-like), discovery results too
    data_calls: int
    data_rows: int
    mutations: tuple[MutationFact, ...] = ()
    # earlier in the conversation: tool results and answers a follow-up may rest on (grounds
    # numbers only; what this turn did is above)
    context: tuple[Any, ...] = ()
    # each result's distinct texts (leaves.leaf_text), when the caller has them (the scan made
    # them): read, not made again
    texts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate's verdict; ``details`` name what failed and the facts against it."""

    name: str
    passed: bool
    details: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "details": list(self.details)}


GATES: tuple[str, ...] = ("phantom_write", "grounded_numbers", "empty_data")


def _ci(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.M)


MAX_FACTS = 2000  # numbers kept from the results: enough for any answer, bounded for speed
MAX_PAIR_FACTS = 200  # facts that pairwise derivations combine; more would only add noise

# A number standing alone: not glued to a word, an id ("A-1042"), a date or another number.
_NUMBER = re.compile(
    r"(?<![\w.,/:#])(?<![A-Za-z]-)(?P<sign>[-−](?=[€$£]?\d))?(?P<cur>[€$£]\s?)?"
    r"(?P<body>\d{1,3}(?P<sep>[,.'\u00a0\u202f\u2009 ])\d{3}(?:(?P=sep)\d{3})*(?:[.,]\d+)?"
    r"|\d+(?:[.,]\d+)?)(?![.,]\d)(?P<scale>(?:k|K|M|bn)(?!\w)|\s?(?:thousand|million|billion"
    r"|Mio|Mrd|Tsd|Millionen|Milliarden)\b\.?)?(?P<pct>\s?%|\s(?:percent|Prozent)\b)?(?!\w)"
)
_SCALES = {"k": 1e3, "thousand": 1e3, "tsd": 1e3, "m": 1e6, "million": 1e6, "mio": 1e6}
_SCALES |= {"millionen": 1e6, "bn": 1e9, "billion": 1e9, "mrd": 1e9, "milliarden": 1e9}
# Dates, times and list markers hold digits that are no quantities: blanked before extraction.
_NOT_QUANTITIES = _ci(
    r"\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}\.\d{1,2}\.\d{2,4}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?|^\s*\d+[.)](?=\s)"
    # what the assistant says of the conversation itself ("I read its first 1,000 characters")
    r"|\b\d[\d,.]*\s+(?:characters|chars|tokens|Zeichen)\b"
)
# A bare 1900-2100 is a year ("in 2024", "2024 was") unless a unit follows ("2000 units", "EUR").
_YEAR_AFTER = re.compile(r"\s*(?:[a-z]{3,}s\b(?<!\bthis)|[A-Z]{3}\b|[€$£%])")

_DIGIT = re.compile(r"\d")
Reading = tuple[float, float]  # a value, and the half-width of the rounding its text shows


@dataclass(frozen=True, slots=True)
class _Number:
    text: str
    readings: tuple[Reading, ...]  # every way to read the text ("1,234": 1234 or 1.234)
    percent: bool
    exempt: bool  # a small count or a year: not checked
    parts: tuple[Reading, ...] = ()  # "5 235" read as two numbers, if not as one


def _numbers(text: str) -> list[_Number]:
    """The quantities written in ``text``, each with every way of reading it."""

    def _reading(text: str, scale: float = 1.0) -> Reading:  # the value, ± its last digit's half
        return float(text) * scale, 0.5 * 10.0 ** -len(text.partition(".")[2]) * abs(scale)

    found: list[_Number] = []
    if _DIGIT.search(text) is None:  # every number has a digit; most sentences have none
        return found
    for m in _NUMBER.finditer(text):
        body, sep, unit = m["body"], m["sep"] or "", (m["scale"] or "").strip(" .").lower()
        scale = _SCALES.get(unit, 1.0) * (-1.0 if m["sign"] else 1.0)
        texts = [(body.replace(sep, "") if sep else body).replace(",", ".")]
        if sep in (",", ".") and body.count(sep) == 1 and len(body.partition(sep)[2]) == 3:
            texts.append(body.replace(",", "."))  # thousands in one language, decimal in another
        parts = [_reading(p.replace(",", ".")) for p in body.split(" ")] if sep == " " else []
        integer = body.isdigit() and not (m["cur"] or m["pct"] or unit or m["sign"])
        year = integer and 1900 <= int(body) <= 2100 and not _YEAR_AFTER.match(text, m.end())
        exempt = year or (integer and int(body) <= 10)
        readings = tuple(_reading(t, scale) for t in texts)
        found.append(_Number(m[0].strip(), readings, bool(m["pct"]), exempt, tuple(parts)))
    return found


Grounds = tuple[list[float], list[list[float]]]  # every fact, sorted; groups that pairs come from


def _grounds(facts: TurnFacts) -> Grounds:
    """Every fact; and the groups pairs combine: a key's values, sum and mean, or the counts (rows,
    totals, the user's numbers). A price minus a quantity would ground any invented integer."""
    groups: dict[str, dict[float, None]] = {"": {}}  # key -> its values; "" the counts
    loose: dict[float, None] = {}  # numbers inside text (ids, dates): grounds, never combined
    # products, per-group figures (derived.py): facts, never combined -- pairs of them would
    # ground percentages and differences by chance
    derived: dict[float, None] = {}
    for text in facts.user_texts:
        groups[""].update((v, None) for n in _numbers(text) for v, _ in n.readings + n.parts)

    def walk(node: Any, key: str, depth: int) -> None:
        if depth > 40 or sum(map(len, groups.values())) >= MAX_FACTS:  # a few keys: cheap
            return
        if (number := as_number(node)) is not None:
            groups.setdefault(key, {})[number] = None
        elif isinstance(node, str):
            text = node[:500]  # long free text holds no figure an answer would rest on
            loose.update((v, None) for n in _numbers(text) for v, _ in n.readings)
            loose.update((float(digits), None) for digits in re.findall(r"\d+", text))
        elif isinstance(node, Mapping):
            for name, value in node.items():
                walk(value, "" if name == "total_count" else str(name), depth + 1)
        elif isinstance(node, list | tuple):
            if rows := [row for row in node if isinstance(row, Mapping)]:
                groups[""][float(len(rows))] = None
                if len(derived) < MAX_FACTS:
                    derived.update(dict.fromkeys(row_figures(rows)))
            columns: dict[str, list[float]] = {}
            for name, value in ((str(k), v) for row in rows for k, v in row.items()):
                if (number := as_number(value)) is not None:
                    columns.setdefault(name, []).append(number)
            for name, values in columns.items():  # each column's sum and mean
                total = sum(values)
                groups.setdefault(name, {}).update({total: None, total / len(values): None})
            for item in node:
                walk(item, key, depth + 1)

    for result in (*facts.results, *facts.context):
        walk(result, "", 0)
    every = sorted({v for group in groups.values() for v in group} | set(loose) | set(derived))
    budget, pairs = MAX_PAIR_FACTS, []
    for group in groups.values():  # the counts first: answers compare them most
        pairs.append(sorted(list(group)[:budget]))
        budget -= len(pairs[-1])
    return every, pairs


def _grounded(value: float, half: float, percent: bool, grounds: Grounds) -> bool:
    """``value`` (read to ±``half``) is a fact, or a difference, ratio or percentage of two."""

    def near(facts: list[float], low: float, high: float) -> bool:
        i = bisect.bisect_left(facts, low)
        return i < len(facts) and facts[i] <= high

    every, groups = grounds
    tol = half + 1e-9 * max(1.0, abs(value))  # float noise must not fail an exact figure
    targets = [(v, tol) for v in (value, -value)]  # signs drop in prose: "a loss of 5"
    if percent:
        targets += [(v / 100, tol / 100) for v in (value, -value)]  # 0.125 shown as 12.5%
    if any(near(every, v - t, v + t) for v, t in targets):
        return True
    for group in groups:
        for b in group:
            candidates = [(b + value, tol), (b - value, tol)]  # a - b = ±value
            if b and percent:  # a / b * 100, and the change (a - b) / b * 100
                candidates += [(value * b / 100, tol * abs(b) / 100)]
                candidates += [(b * (1 + s * value / 100), tol * abs(b) / 100) for s in (1, -1)]
            elif b:  # a / b: "2.5 times as many"
                candidates.append((value * b, tol * abs(b)))
            if any(near(group, a - t, a + t) for a, t in candidates):
                return True
    return False


def _ungrounded(text: str, grounds: Grounds, *, sums: bool = True) -> list[str]:
    """The numbers of ``text`` the grounds do not give; with ``sums``, a figure that sums others
    the answer states (and that are grounded) counts as given."""
    doubtful: list[_Number] = []
    stated: list[Reading] = []  # the grounded figures, in the answer's order
    for n in _numbers(_NOT_QUANTITIES.sub(" ", text)):
        if n.exempt:
            continue
        good = [(v, h) for v, h in n.readings if _grounded(v, h, n.percent, grounds)]
        if good:
            stated += good[:1] if not n.percent else []
        elif not (n.parts and all(_grounded(v, h, False, grounds) for v, h in n.parts)):
            doubtful.append(n)
    found: dict[str, None] = {}
    for n in doubtful:
        tol = 1e-9 * max(1.0, *(abs(v) for v, _ in n.readings))
        if n.percent or not sums or not any(stated_sum(v, h + tol, stated) for v, h in n.readings):
            found[n.text] = None
    return list(found)


def _near(facts: list[float], low: float, high: float) -> bool:
    """Whether sorted ``facts`` hold a value in [``low``, ``high``]."""
    i = bisect.bisect_left(facts, low)
    return i < len(facts) and facts[i] <= high


def _written(value: float, text: str) -> bool:
    """Whether ``value`` is written in ``text`` as a number of its own (``28``, ``28.0``, not
    ``128`` or ``0.28``): an occurrence no digit or point comes before and no digit after (a
    point after it, as in ``28.0`` or ``28.5``, is allowed)."""
    whole = f"{value:.0f}" if value == int(value) else repr(value)
    # str.find, not a regex: the text is searched once for the common miss, and each
    # occurrence's neighbours are two characters (isdecimal(): what a regex's \d matches)
    at = text.find(whole)
    while at >= 0:
        end = at + len(whole)
        if (at == 0 or not (text[at - 1].isdecimal() or text[at - 1] == ".")) and (
            end == len(text) or not text[end].isdecimal()
        ):
            return True
        at = text.find(whole, at + 1)
    return False


def _literally_there(answer: str, facts: TurnFacts) -> bool:
    """Whether every checked number of ``answer`` is written as it is in the facts: the common
    case, judged on their distinct texts (:func:`~.leaves.leaf_text`; ``facts.texts`` when the
    caller made them already), so the derivations are searched only when needed; earlier context
    is read only if this turn's facts miss a number."""
    checked = [n for n in _numbers(answer) if not n.exempt]
    if not checked:
        return True
    if any(n.parts for n in checked):
        return False
    texts = [*(facts.texts or map(leaf_text, facts.results)), *facts.user_texts]

    def found(number: _Number) -> bool:
        return any(_written(abs(v), t) for v, _ in number.readings for t in texts)

    missing = [n for n in checked if not found(n)]
    if missing and facts.context:
        texts = [leaf_text(facts.context)]
        missing = [n for n in missing if not found(n)]
    return not missing


def _grounded_numbers(answer: str, facts: TurnFacts) -> GateResult:
    if _literally_there(answer, facts):
        return GateResult("grounded_numbers", True)
    bad = _ungrounded(answer, _grounds(facts))
    return GateResult("grounded_numbers", not bad, tuple(bad))


_VERBS = (
    r"updated|changed|created|deleted|removed|renamed|saved|set|assigned|added|modified|edited"
    r"|applied|executed|made\s+the\s+changes?|aktualisiert|geändert|gelöscht|angelegt|erstellt"
    r"|gespeichert|entfernt|hinzugefügt|umbenannt|zugewiesen|gesetzt"
)
_ADV = r"(?:\s+(?:just|now|already|successfully|also|then|finally|all|(?:gone|went) ahead and))*"
# A first-person subject makes a claim: "I have updated", "Ich habe ... geändert".
_AGENTIVE = _ci(
    rf"\b(?:I|we)(?:\s*['’]ve|\s+have)?{_ADV}\s+(?:{_VERBS})\b|\b(?:(?:ich|wir)\s+"
    rf"(?:habe|haben|hab)|(?:habe|haben)\s+(?:ich|wir))\b.*?\b(?:{_VERBS})\b"
)
# These forms claim a change too, unless the sentence tells the data's history.
_DESCRIBED = _ci(
    rf"(?:\b(?:has|have)|['’]s)\s+(?:\w+\s+)?been{_ADV}\s+(?:{_VERBS})\b|\b(?:was|were){_ADV}"
    rf"\s+(?:{_VERBS})\b|\bsuccessfully\s+(?:{_VERBS})\b|\b(?:wurde|wurden|ist|sind)\b.*?\b"
    rf"(?:{_VERBS})\b|^(?:[\w'’@.-]+\s+){{1,4}}(?:updated|changed|renamed|set)\s+to\b"
    r"|^(?:all\s+|alles\s+|it['’]s\s+|that['’]s\s+)?(?:done|erledigt)\b"
)
_ANY_VERB = _ci(rf"\b(?:{_VERBS})\b")
# Every claim above holds one of these words: an answer without any claims no change (the
# common case), and its sentences need not be read clause by clause. Asked of the answer with
# the markup _sentences removes taken out, as the clauses are read without it.
_CLAIM_WORD = _ci(rf"\b(?:{_VERBS}|done|erledigt)\b")
_MARKUP = re.compile(r"[*_`]+")
_BARE_DONE = _ci(r"^(?:all\s+|alles\s+|it['’]s\s+|that['’]s\s+)?(?:done|erledigt)\b")
_NEGATION = _ci(
    r"\b(?:not|never|no|nothing|none|neither|nor|without|unchanged|nicht|kein\w*|nichts|nie)\b"
    r"|n['’]t\b"
)
# Future, conditional and proposal wording: the change is offered, not reported.
_NOT_YET = _ci(
    r"\b(?:will|would|could|can|shall|should|may|might|going\s+to|want|plan\w*|propos\w*|suggest\w*"
    r"|if|once|await\w*|waiting|pending|confirm\w*|approv\w*|ready|about\s+to|draft\w*|prepared"
    r"|werde\w*|wird|würde\w*|kann|können|könnte\w*|soll\w*|möchte\w*|sobald|wenn|falls"
    r"|bestätig\w*|vorgeschlagen|vorschlag\w*)\b|['’]ll\b"
)
# History told about the data ("created in 2021", "deleted according to the log").
_HISTORY = _ci(
    r"\b(?:(?:19|20)\d\d|\d{1,2}\.\d{1,2}\.\d{2,4}|ago|yesterday|last\s+\w+|this\s+(?:week|month"
    r"|year|quarter)|since|according\s+to|log|history|previously|earlier|originally|between|during"
    r"|on\s+\d|in\s+(?:q[1-4]|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|times"
    r"|letzte\w*|seit|gestern|laut|früher|zuvor)\b"
)
# What the model made for the reader, not in the data: "I created a table", "I added up".
_NOT_DATA = _ci(
    r"^\s*(?:\w+\s+){0,2}(?:table|chart|summary|overview|list|breakdown|plot|report|filter"
    r"|query|column|up|together|note)\b"
)
_CLAUSES = _ci(r"[;:,]|\s[—–-]\s|\b(?:but|so|because|however|although|aber|daher|weil)\b")
_DELETES = ("delete", "remove", "gelöscht", "entfernt")
_CREATES = ("create", "add", "angelegt", "erstellt", "hinzugef")


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [s for p in parts if (s := re.sub(r"^[\s>*#•-]+|[*_`]+", "", p).strip())]


def _family(word: str) -> str:
    """The kind of change a verb or a mutation's name means: create, delete or update."""
    w = word.lower()
    return "delete" if w.startswith(_DELETES) else "create" if w.startswith(_CREATES) else "update"


def _claims(answer: str) -> list[tuple[str, set[str]]]:
    """(sentence, the kinds of change it claims) for each sentence claiming a change."""
    found: list[tuple[str, set[str]]] = []
    if not _CLAIM_WORD.search(_MARKUP.sub("", answer)):
        return found
    for sentence in (s for s in _sentences(answer) if not s.endswith("?")):
        for clause in (c.strip() for c in _CLAUSES.split(sentence)):
            if _NEGATION.search(clause) or _NOT_YET.search(clause):
                continue
            claim = _AGENTIVE.search(clause)
            claim = claim or (None if _HISTORY.search(clause) else _DESCRIBED.search(clause))
            if claim and not _NOT_DATA.match(clause[claim.end() :]):
                verbs = _ANY_VERB.findall(clause[claim.start() :])  # "updated X and deleted Y"
                found.append((sentence, set(map(_family, verbs))))
                break
    return found


_ENDINGS = {"executed": "was executed", "rejected": "was rejected by the user", "failed": "failed"}
_ENDINGS |= {"timed_out": "timed out waiting for the user's confirmation", "refused": "was refused"}
_ENDINGS |= {"pending": "still waits for the user's confirmation"}


def _what_happened(facts: TurnFacts) -> str:
    stories = "; ".join(f"{m.mutation} {_ENDINGS[m.status]}" for m in facts.mutations)
    if not any(m.status == "executed" for m in facts.mutations):
        return f"no change was executed in this turn ({stories or 'none was proposed'})"
    return f"not every change of this turn was executed ({stories})"


def _phantom_write(answer: str, facts: TurnFacts) -> GateResult:
    claims = _claims(answer)
    if claims and not facts.mutations and not asks_for_change(facts.user_texts):
        # "Done." closing a read the user asked for claims no change
        claims = [(s, kinds) for s, kinds in claims if not _BARE_DONE.match(s)]
    if done := {_family(m.mutation) for m in facts.mutations if m.status == "executed"}:
        # beside an executed change, only a claim of a kind proposed and never executed fails
        undone = {_family(m.mutation) for m in facts.mutations if m.status != "executed"} - done
        claims = [(s, kinds) for s, kinds in claims if kinds & undone]
    said = [f"claim: {s}" for s in dict.fromkeys(s for s, _ in claims)]
    fact = (f"fact: {_what_happened(facts)}",) if said else ()
    return GateResult("phantom_write", not said, (*said, *fact))


_NOTHING = _ci(
    r"\b(?:no|none|nothing|not|cannot|unable|empty|zero|failed|error\w*|could\s+not|keine?\w*"
    r"|nichts|nicht|leer|fehler\w*|fehlgeschlagen)\b|n['’]t\b"
)
# A bullet or a table row; advice after "nothing found" ("- try a wider range") is no finding.
_LIST_ITEM = _ci(
    r"^\s*(?:[-*•]|\d+[.)])\s+(?!(?:try|check|use|widen|broaden|remove|ask|verify|search|look"
    r"|change|adjust|make\s+sure|consider|versuch\w*|prüf\w*)\b)\S.*$|^\s*\|(?![\s|:-]*$).*\|\s*$"
)
_ASSERTION = _ci(r"\b(?:has|have|had|is|are|was|were|costs?|totals?|contains?|hat|ist|sind)\b")


def _empty_data(answer: str, facts: TurnFacts) -> GateResult:
    if facts.data_calls == 0:
        return GateResult("empty_data", True, ("no data calls",))
    errors = [r for r in facts.results if isinstance(r, Mapping) and r.get("status") == "error"]
    all_errors = bool(errors) and len(errors) == len(facts.results)
    if facts.data_rows > 0 and not all_errors:
        return GateResult("empty_data", True)
    stated = []
    # no derivations over nothing
    if invented := _ungrounded(answer, (_grounds(facts)[0], []), sums=False):
        stated.append(f"numbers not from the user or the results: {', '.join(invented)}")
    if (items := len(_LIST_ITEM.findall(answer))) >= 2:
        stated.append(f"a list of {items} items")
    if not _NOTHING.search(answer):
        sentences = [s for s in _sentences(answer) if not s.endswith("?")]
        stated += [f"says: {s}" for s in sentences if _ASSERTION.search(s)][:3]
    fact = "every data result of this turn was an error" if all_errors else ""
    fact = fact or f"every data call of this turn ({facts.data_calls}) returned no rows or failed"
    return GateResult("empty_data", not stated, (f"fact: {fact}", *stated) if stated else ())


_CHECKS = dict(zip(GATES, (_phantom_write, _grounded_numbers, _empty_data), strict=True))


def check_answer(
    answer: str, facts: TurnFacts, enabled: Collection[str] = GATES
) -> list[GateResult]:
    """Every enabled gate's verdict on ``answer``, in the order of :data:`GATES`."""
    if unknown := set(enabled) - set(GATES):
        raise ValueError(f"unknown completion gates: {', '.join(sorted(unknown))}")
    return [_CHECKS[name](answer, facts) for name in GATES if name in enabled]


_UNSUPPORTED = "which neither this turn's tool results nor the user's words give or imply"
_SAY_NONE = "say that nothing was found or that the data could not be retrieved"
_REWRITE = "Rewrite the answer so it states only what the tool results show; do not call any tool"
_REWRITE += " to change data."


def correction_request(failed: Sequence[GateResult], facts: TurnFacts) -> str:
    """The one message asking the model to rewrite its answer, naming each failed check."""
    lines = []
    for gate in failed:
        said = [d.removeprefix("claim: ") for d in gate.details if not d.startswith("fact: ")]
        if gate.name == "phantom_write":
            quoted = " and ".join(f"'{claim.rstrip('.!')}'" for claim in said)
            lines.append(f"Your answer says {quoted}, but {_what_happened(facts)}.")
        elif gate.name == "grounded_numbers":
            lines.append(f"Your answer gives {', '.join(said)}, {_UNSUPPORTED}.")
        elif gate.name == "empty_data":
            fact, stated = gate.details[0].removeprefix("fact: "), "; ".join(said)
            lines.append(f"Your answer states results ({stated}), but {fact}: {_SAY_NONE}.")
    return "\n".join([*lines, _REWRITE] if lines else [])


_NOTES = {"phantom_write": "it says a change was made, but none was executed"}
_NOTES |= {"grounded_numbers": "{} could not be traced to this turn's data"}
_NOTES |= {"empty_data": "the data calls returned nothing, yet it states results"}


def warning_note(failed: Sequence[GateResult]) -> str:
    """The footnote shown under an answer that still fails after its correction."""
    said = [_NOTES[g.name].format(", ".join(g.details)) for g in failed if g.name in _NOTES]
    return f"\n\n> ⚠ Not verified: {'; '.join(said)}." if said else ""
