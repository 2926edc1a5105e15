"""The offline provider: a deterministic, schema-grounded baseline that needs no model.

:class:`OfflineProvider` answers analytics questions with the same tools a language model gets and
sees nothing else: each call to :meth:`~OfflineProvider.complete` reads the conversation (the last
user message and the tool results that follow it) and decides the next step from scratch, so the
same conversation always gives the same events. Its plan for a question:

1. ``search_managers`` with the question;
2. choose the row manager (the manager the question names first, else the top hit) and fetch its
   schema, together with the schemas of the other managers the question names;
3. read the question against those schemas: comparisons (``denser than 5``, ``before 2025-06-01``)
   become numeric or date filters, boolean field words (``urgent``) become ``true`` filters,
   "how many" asks for a count, "highest density" for an ordering; the words left over are values
   (``cobalt``, ``Germany``, ``active``) which one round of ``query`` probes locates, together with
   the ``find_path`` routes to every manager a probe or condition may need;
4. one ``query`` on the row manager with Django-style filter paths built from those routes;
5. a plain answer from that result alone.

It never calls ``mutate``: write requests get an honest refusal, as do questions it cannot map to
the data ("why", opinions, nothing matching).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..project.names import clip, normalize_key, singular, split_words
from .base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)

__all__ = ["OfflineProvider"]

PROBE_CAP = 8  # value probes per question: enough for two values over the usual neighbourhood
RESULT_LIMIT = 50  # rows the final query asks for (the answer names each of them)
ID_PREFIX = "offline-"
REQUIRED_TOOLS = ("search_managers", "get_manager_schema", "query")
MAX_FIELD_HINTED = 2  # extra schemas fetched only because the question names one of their fields
# The part of a question the planner reads. Every step re-reads the question against every
# manager it names, so a pasted document would cost seconds of a shared event loop per step.
MAX_QUESTION_CHARS = 1000
MAX_LISTED_WORDS = 12  # words an answer quotes back when nothing matched
LONG_QUESTION_NOTE = (
    f"(Your question was long: I read only its first {MAX_QUESTION_CHARS:,} characters.)"
)

# Words that carry no value to look up: question scaffolding, common verbs of the domain and the
# comparison vocabulary the comparison parser already consumed.
_STOPWORDS = frozenset(
    """
    a an the of in on at to for from by with without within into onto via per as and or but nor
    is are was were be been being am do does did done have has had having will would shall should
    can could may might must let lets please
    which what who whom whose where when how many much that this these those there here
    their them they it its me my we our us you your i he she his her
    show shows list lists give find get display tell see view print return name names named called
    all any some every each both either neither other others only just also same own such
    made make makes use uses used using contain contains containing include includes including
    based located belong belongs belonging related associated linked currently current
    exist exists existing available known total number count amount
    buy buys bought sell sells sold supply supplies supplied supplying provide provides provided
    deliver delivers delivered stock stocked stocks order orders ordered placed place
    cost costs costing priced come comes came go goes
    than more less fewer most least highest lowest largest smallest biggest greatest top bottom
    maximum minimum max min over above under below before after since until till between exactly
    equal equals least at up sorted sort ordered first last ascending descending asc desc
    not no non yes true false whether if then so about like kind type types
    data record records row rows entry entries item items detail details info information
    value values one ones thing things
    """.split()  # noqa: SIM905
)
_REFERENCE_WORDS = frozenset({"them", "those", "these", "they", "ones"})
_NEGATIONS = frozenset({"not", "non", "no", "never", "isn't", "aren't", "wasn't", "weren't"})

# A write request: an imperative (or polite) data-changing verb. Read questions phrase the same
# verbs in the past ("created", "updated"), which these patterns leave alone.
_WRITE_VERBS = (
    r"create|delete|remove|update|change|modify|rename|insert|edit|drop|erase|replace|archive"
)
_WRITE = re.compile(
    rf"\b(?:{_WRITE_VERBS})\b"
    r"|\badd\s+(?:a|an|new|the|some|another|\d+)\b|\badd\b.+\bto\b"
    r"|\bset\b.+\bto\b|\bmark\b.+\bas\b",
    re.IGNORECASE,
)
_OPINION = re.compile(
    r"\bwhy\b|\bshould\b|\bopinion\b|\brecommend|\bdo you (?:think|believe|feel)\b"
    r"|\bbest\b|\bworst\b|\bbetter\b|\bworse\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"\w(?:[\w'’.\-]*\w)?")
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")

# -- comparisons ---------------------------------------------------------------------------------

_VALUE = (
    r"(?:(?P<date{n}>\d{{4}}-\d{{2}}-\d{{2}})"
    r"|(?P<cur{n}>[€$£])?\s?(?P<num{n}>-?\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|-?\d+(?:\.\d+)?)(?:\s?(?P<unit{n}>[€$£]|[^\W\d_][\w/³²]{{0,5}}))?)"
)
_OP = (
    r"(?P<op>>=|<=|=>|=<|>|<|="
    r"|\b(?:no|not)\s+(?:more|less|fewer|greater|higher|lower)\s+than\b"
    r"|\b(?:(?:more|less)\s+)?[a-z]+\s+than\b"
    r"|\bat\s+least\b|\bat\s+most\b|\bup\s+to\b|\bexactly\b|\bequal\s+to\b|\bequals\b"
    r"|\bover\b|\babove\b|\bexceeding\b|\bunder\b|\bbelow\b"
    r"|\bbefore\b|\bafter\b|\bsince\b|\buntil\b|\btill\b|\bon\b)"
)
_COMPARISON = re.compile(_OP + r"\s*" + _VALUE.format(n=""), re.IGNORECASE)
_IN_YEAR = re.compile(r"\b(?:in|during)\s+(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)
_BETWEEN = re.compile(
    r"\bbetween\s+" + _VALUE.format(n="") + r"\s+and\s+" + _VALUE.format(n="2"), re.IGNORECASE
)
_SUPERLATIVE = re.compile(
    r"\b(?P<word>most\s+expensive|least\s+expensive|highest|lowest|largest|smallest|biggest"
    r"|greatest|most|least|fewest|top|maximum|minimum|cheapest|densest|heaviest|lightest"
    r"|newest|oldest|latest|earliest|longest|shortest)\b",
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"\b(?:top|first)\s+(?P<after>\d{1,3})\b|\b(?P<before>\d{1,3})\s+(?:most|least|cheapest"
    r"|densest|heaviest|lightest|newest|oldest|latest|earliest|longest|shortest|highest|lowest"
    r"|largest|smallest|biggest|greatest)\b",
    re.IGNORECASE,
)
_SYMBOL_LOOKUPS = {">": "gt", ">=": "gte", "=>": "gte", "<": "lt", "<=": "lte", "=<": "lte"}
_WORD_LOOKUPS = {
    "at least": "gte",
    "at most": "lte",
    "up to": "lte",
    "exactly": "exact",
    "equal to": "exact",
    "equals": "exact",
    "=": "exact",
    "over": "gt",
    "above": "gt",
    "exceeding": "gt",
    "under": "lt",
    "below": "lt",
    "before": "lt",
    "after": "gt",
    "since": "gte",
    "until": "lte",
    "till": "lte",
    "on": "exact",  # dates only: "placed on 2025-06-03"
}
_DATE_WORDS = frozenset(
    {"before", "after", "since", "until", "till", "earlier", "later", "older", "newer"}
)
_UP_GENERIC = frozenset({"more", "greater", "higher", "larger", "bigger"})
_DOWN_GENERIC = frozenset({"less", "fewer", "lower", "smaller"})
_DOWN_ADJECTIVES = frozenset(
    {"cheaper", "lighter", "shorter", "thinner", "narrower", "slower", "colder", "earlier", "older"}
)
_NOT_COMPARISONS = frozenset({"other", "rather"})
_DESCENDING = frozenset(
    {
        "most expensive",
        "highest",
        "largest",
        "biggest",
        "greatest",
        "most",
        "top",
        "maximum",
        "densest",
        "heaviest",
        "newest",
        "latest",
        "longest",
    }
)
# Adjectives whose field is named differently: "cheaper" compares a price, "heavier" a weight.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "cheap": ("price", "cost"),
    "expensive": ("price", "cost"),
    "pricy": ("price",),
    "pricey": ("price",),
    "costly": ("cost", "price"),
    "heavy": ("weight", "mass"),
    "light": ("weight", "mass"),
    "long": ("length",),
    "short": ("length",),
    "tall": ("height",),
    "wide": ("width",),
    "narrow": ("width",),
    "thick": ("thickness",),
    "thin": ("thickness",),
}
_DATE_ADJECTIVES = frozenset({"old", "new", "early", "late", "recent"})
_UNITS = frozenset(
    "eur usd chf gbp sek jpy kg g mg t m cm mm km l ml h min s pcs".split()  # noqa: SIM905
)
_CURRENCIES = {"€": "EUR", "$": "USD", "£": "GBP"}
_NUMBER_TYPES = frozenset({"Int", "Float", "Decimal", "BigInt", "Long", "PositiveInt"})
_LOOKUP_WORDS = {
    "exact": "is",
    "icontains": "contains",
    "contains": "contains",
    "in": "is one of",
    "startswith": "starts with",
    "endswith": "ends with",
    "gt": ">",
    "gte": ">=",
    "lt": "<",
    "lte": "<=",
}

WRITE_REFUSAL = (
    "I can't do that: the offline assistant only reads data and never changes it (no creating, "
    "updating or deleting). Changing data needs a model-backed provider with the mutation "
    "allow-listed, and every change still waits for your confirmation."
)
OPINION_REFUSAL = (
    "I can't answer that: the offline assistant only looks up records in the project's data; it "
    "cannot explain reasons or give opinions. Ask which records match something instead, for "
    'example "Which parts are made of steel?".'
)


class OfflineProvider(BaseLLMProvider):
    """A deterministic provider that plans tool calls from the schema alone (no model, no keys).

    Each response is either read-only tool calls or a final text answer, followed by exactly one
    ``DoneEvent`` with zero token usage. Tool-call ids are ``offline-<n>``, numbered across the
    whole conversation so that they stay unique.
    """

    name: ClassVar[str] = "offline"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream the next step for ``messages``: tool calls, or the answer."""
        turn = _read_turn(messages)
        offered = frozenset(tool.name for tool in tools)
        step = (
            _Planner(turn, offered).step()
            if turn is not None
            else _Step(text="Ask me a question about the project's data.")
        )
        if step.calls:
            next_id = turn.next_id if turn is not None else 1
            for offset, (name, args) in enumerate(step.calls):
                yield ToolCallEvent(f"{ID_PREFIX}{next_id + offset}", name, args)
            yield DoneEvent(TokenUsage(0, 0), finish_reason="tool_calls")
            return
        yield TextChunkEvent(step.text)
        yield DoneEvent(TokenUsage(0, 0), finish_reason="stop")


# -- reading the conversation ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    """One tool call of this turn with its result (``answered`` is False while it has none)."""

    name: str
    args: Mapping[str, Any]
    result: Any
    answered: bool

    @property
    def ok(self) -> bool:
        """Whether the call came back with a usable (non-error) result."""
        if not self.answered:
            return False
        return not (isinstance(self.result, dict) and self.result.get("status") == "error")

    @property
    def error_message(self) -> str:
        """The error a failed call reported, for an honest answer."""
        if isinstance(self.result, dict) and self.result.get("message"):
            return str(self.result["message"])
        return f"{self.name} returned no result."


@dataclass(slots=True)
class _Turn:
    """The last user question, the rounds of tool calls after it (by kind) and the history."""

    question: str
    rounds: dict[str, list[_Call]]
    previous: tuple[str, dict[str, Any]] | None  # the last turn's row manager and filters
    next_id: int


def _read_turn(messages: Sequence[Message]) -> _Turn | None:
    """The state of the current turn, rebuilt from history alone (the provider keeps none)."""
    last_user = next(
        (index for index in range(len(messages) - 1, -1, -1) if messages[index].role == "user"),
        None,
    )
    if last_user is None:
        return None
    tail = messages[last_user + 1 :]
    results = {
        message.tool_call_id: message.tool_result
        for message in tail
        if message.role == "tool" and message.tool_call_id is not None
    }
    rounds: dict[str, list[_Call]] = {}
    for message in tail:
        if message.role == "assistant" and message.tool_calls:
            calls = [
                _Call(call.name, dict(call.args), results.get(call.id), call.id in results)
                for call in message.tool_calls
            ]
            rounds[_round_kind(calls)] = calls
    previous: tuple[str, dict[str, Any]] | None = None
    for message in messages[:last_user]:
        for call in message.tool_calls if message.role == "assistant" else ():
            if call.name == "query" and not _is_probe(call.args):
                filters = call.args.get("filters")
                previous = (
                    str(call.args.get("manager", "")),
                    dict(filters) if isinstance(filters, dict) else {},
                )
    next_id = 1 + sum(
        len(message.tool_calls) for message in messages if message.role == "assistant"
    )
    return _Turn(messages[last_user].content, rounds, previous, next_id)


def _is_probe(args: Mapping[str, Any]) -> bool:
    # Probes ask for one row; the final query always asks for at least two.
    return args.get("limit") == 1


def _round_kind(calls: Sequence[_Call]) -> str:
    names = {call.name for call in calls}
    if "search_managers" in names:
        return "search"
    if "get_manager_schema" in names:
        return "schema"
    if "find_path" in names or any(c.name == "query" and _is_probe(c.args) for c in calls):
        return "locate"
    if "query" in names:
        return "final"
    return "other"


# -- the question as words -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    """One word of the question with its position and its case-folded singular."""

    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        """The word in lower case."""
        return self.text.lower()

    @property
    def base(self) -> str:
        """The lower-case singular, for plural-blind comparisons."""
        return singular(self.lower)


def _tokenize(text: str) -> list[_Token]:
    return [_Token(match.group(), match.start(), match.end()) for match in _TOKEN.finditer(text)]


def _word_forms(name: str) -> list[list[str]]:
    """How a camelCase name is written in prose: ``unitPrice`` -> ``unit price``."""
    words = [singular(word) for word in split_words(name)]
    return [words] if words else []


def _find(tokens: Sequence[_Token], words: Sequence[str]) -> list[tuple[int, int]]:
    """Where the word sequence ``words`` (singular, lower case) occurs, as token index ranges."""
    found: list[tuple[int, int]] = []
    size = len(words)
    for start in range(len(tokens) - size + 1):
        if all(tokens[start + k].base == words[k] for k in range(size)):
            found.append((start, start + size))
    joined = "".join(words)
    if size > 1:  # "PurchaseOrders" or "purchase_orders" written as one word
        for index, token in enumerate(tokens):
            if singular(normalize_key(token.text)) == joined:
                found.append((index, index + 1))
    return found


def _stems(word: str) -> list[str]:
    """Base forms of a comparative or superlative: ``denser`` -> ``dens``, ``dense``."""
    word = word.lower()
    stems = [word]
    for suffix, replacement in (
        ("iest", "y"),
        ("ier", "y"),
        ("est", ""),
        ("est", "e"),
        ("er", ""),
        ("er", "e"),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stems.append(word[: -len(suffix)] + replacement)
    return stems


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _noun(manager: str, count: int) -> str:
    """``PurchaseOrder`` -> ``purchase order`` / ``purchase orders``."""
    words = split_words(manager) or [manager.lower()]
    noun = " ".join(words)
    return noun if count == 1 else _plural(noun)


def _humanize(name: str) -> str:
    """A field or relation name as prose: ``unitPrice`` -> ``unit price``, ``partsList`` -> ``parts``."""
    words = split_words(name)
    if len(words) > 1 and words[-1] == "list":
        words = words[:-1]
    return " ".join(words) or name


# -- schema facts --------------------------------------------------------------------------------


def _field_kind(info: Mapping[str, Any]) -> str:
    """``number``, ``measurement``, ``date``, ``boolean``, ``text``, ``id`` or ``other``."""
    kind = str(info.get("type", ""))
    parts = info.get("parts") or ()
    if "value" in parts and "unit" in parts:
        return "measurement"
    if kind in _NUMBER_TYPES:
        return "number"
    if kind in ("Date", "DateTime"):
        return "date"
    if kind == "Boolean":
        return "boolean"
    if kind == "ID":
        return "id"
    if kind == "String":
        return "text"
    return "other"


def _fields(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    fields = schema.get("fields")
    return dict(fields) if isinstance(fields, dict) else {}


def _lookups(schema: Mapping[str, Any], name: str) -> tuple[str, ...]:
    filters = schema.get("filters")
    entry = filters.get(name) if isinstance(filters, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("lookups"), list):
        return tuple(str(item) for item in entry["lookups"])
    return ()


def _text_filters(schema: Mapping[str, Any]) -> list[str]:
    """The String fields that take ``icontains``, ``name`` first."""
    names = [
        name
        for name, info in _fields(schema).items()
        if _field_kind(info) == "text" and "icontains" in _lookups(schema, name)
    ]
    return sorted(names, key=lambda name: name != "name")


def _label_field(schema: Mapping[str, Any]) -> str:
    """The field that names a row: ``name``, else the first String, else the first plain field."""
    fields = _fields(schema)
    if "name" in fields:
        return "name"
    for kinds in (("text",), ("number", "date", "boolean", "other")):
        for name, info in fields.items():
            if _field_kind(info) in kinds:
                return name
    return "id"


def _relation_targets(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    relations = schema.get("relations")
    if not isinstance(relations, dict):
        return []
    return [
        (str(name), str(info.get("target")))
        for name, info in relations.items()
        if isinstance(info, dict) and info.get("target")
    ]


# -- the plan ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Step:
    """What one response does: tool calls (name, args), or a final text."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str = ""


@dataclass(frozen=True, slots=True)
class _Mention:
    """A field of a fetched manager named in the question (token range ``start:end``)."""

    start: int
    end: int
    manager: str
    field: str
    kind: str
    negated: bool = False


@dataclass(frozen=True, slots=True)
class _Comparison:
    """``denser than 5``: a lookup, a value and what points at the field."""

    start: int  # token range
    end: int
    lookup: str
    kind: str  # "number" or "date"
    value: str  # the number or date as written
    unit: str | None
    hint: str | None  # an adjective such as "denser"
    phrase: str


@dataclass(frozen=True, slots=True)
class _Condition:
    """A filter on ``manager.field`` (the row manager's own, or reached by a path)."""

    manager: str
    field: str
    lookup: str
    value: Any


@dataclass(slots=True)
class _Reading:
    """The question read against the fetched schemas."""

    conditions: list[_Condition] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    order: tuple[str, bool] | None = None  # field, descending
    unordered: str | None = None  # a superlative with no field to sort by
    limit: int = RESULT_LIMIT  # "the 3 cheapest": fewer rows
    dates: frozenset[str] = frozenset()  # the row manager's date fields, for wording
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class _Probe:
    """Look for ``phrase`` in ``manager.field`` (one row is enough)."""

    phrase: str
    manager: str
    field: str

    def args(self) -> dict[str, Any]:
        """The ``query`` arguments of the probe."""
        return {
            "manager": self.manager,
            "fields": [self.field],
            "filters": {f"{self.field}__icontains": _probe_value(self.phrase)},
            "limit": 1,
        }


class _Planner:
    """Decides one step of one turn. Stateless: everything is recomputed from the turn."""

    def __init__(self, turn: _Turn, offered: frozenset[str]) -> None:
        self.turn = turn
        self.offered = offered
        question = turn.question.strip()
        self.cut = len(question) > MAX_QUESTION_CHARS
        self.question = _start_of(question) if self.cut else question
        self.tokens = _tokenize(self.question)

    def step(self) -> _Step:
        """The next response of this turn (an answer says when the question was cut)."""
        step = self._step()
        if self.cut and not step.calls:
            step.text = f"{LONG_QUESTION_NOTE} {step.text}"
        return step

    def _step(self) -> _Step:
        if not self.question:
            return _Step(text="Ask me a question about the project's data.")
        if _WRITE.search(self.question):
            return _Step(text=WRITE_REFUSAL)
        if _OPINION.search(self.question):
            return _Step(text=OPINION_REFUSAL)
        missing = [name for name in REQUIRED_TOOLS if name not in self.offered]
        if missing:
            return _Step(
                text="I can't look this up: the offline assistant needs the tools "
                + ", ".join(missing)
                + ", which are not available here."
            )
        search = self.turn.rounds.get("search")
        if search is None:
            return _Step(calls=[("search_managers", {"query": self.question})])
        if not search[0].ok:
            return _Step(
                text=f"I could not search the project's data types: {search[0].error_message}"
            )
        listed = search[0].result if isinstance(search[0].result, list) else []
        hits = [hit for hit in listed if isinstance(hit, dict) and hit.get("manager")]
        row, others = self._choose(hits)
        if row is None:
            return _Step(text=self._no_match_text())
        schema_round = self.turn.rounds.get("schema")
        if schema_round is None:
            return _Step(
                calls=[("get_manager_schema", {"manager": name}) for name in [row, *others]]
            )
        schemas = {
            str(call.args.get("manager")): call.result
            for call in schema_round
            if call.ok and isinstance(call.result, dict)
        }
        if row not in schemas:
            failed = next((c for c in schema_round if c.args.get("manager") == row), None)
            reason = failed.error_message if failed is not None else "no schema came back"
            return _Step(text=f"I could not read the schema of {row}: {reason}")
        return self._after_schemas(row, [name for name in others if name in schemas], schemas, hits)

    # -- choosing managers -----------------------------------------------------------------------

    def _manager_spans(self, name: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        for words in _word_forms(name):
            spans.extend(_find(self.tokens, words))
            if len(words) > 1 and len(words[-1]) >= 4:
                # "orders" alone still names PurchaseOrder when nothing else claims the word.
                spans.extend(_find(self.tokens, words[-1:]))
        return spans

    def _choose(self, hits: list[dict[str, Any]]) -> tuple[str | None, list[str]]:
        """The row manager and the other managers whose schemas help read the question."""
        known: list[str] = []
        for hit in hits:
            known.append(str(hit["manager"]))
            relations = hit.get("relations")
            if isinstance(relations, dict):
                known.extend(str(target) for target in relations.values())
        known = list(dict.fromkeys(known))
        positions: dict[str, int] = {}
        for name in known:
            spans = self._manager_spans(name)
            if spans:
                positions[name] = min(start for start, _ in spans)
        # A full-name mention beats a partial one at the same place ("purchase orders" vs
        # "orders"), and the earliest mention is the subject: "Which parts does project Apollo
        # use?" lists parts.
        named = sorted(positions, key=lambda name: (positions[name], -len(split_words(name))))
        row: str | None = named[0] if named else None
        previous = self.turn.previous
        referring = any(token.lower in _REFERENCE_WORDS for token in self.tokens)
        if row is None and previous is not None and previous[0] and (referring or not hits):
            row = previous[0]
        if row is None and hits:
            row = str(hits[0]["manager"])
        if row is None:
            return None, []
        others = [name for name in named if name != row]
        # Hits with a field the question names and the row manager lacks ("hazardous" parts):
        # their schemas say how to filter on it.
        words = {token.base for token in self.tokens}
        summaries = {str(hit["manager"]): hit for hit in hits}
        own = set(summaries[row].get("fields") or ()) if row in summaries else set()
        extra = 0
        for name, hit in summaries.items():
            if name == row or name in others or extra >= MAX_FIELD_HINTED:
                continue
            plain = [f for f in hit.get("fields") or () if isinstance(f, str) and f not in own]
            for field_name in plain:
                forms = _word_forms(field_name)
                if field_name in ("id", "name", "...") or not forms:
                    continue
                if all(word in words for word in forms[0]):
                    others.append(name)
                    extra += 1
                    break
        return row, others

    def _content_words(self) -> list[str]:
        return [
            token.text
            for token in self.tokens
            if token.lower not in _STOPWORDS and not _is_number(token.text)
        ]

    def _no_match_text(self) -> str:
        words = [f'"{clip(word, 40)}"' for word in self._content_words()]
        if len(words) > MAX_LISTED_WORDS:
            words[MAX_LISTED_WORDS:] = ["…"]
        looked = ", ".join(words) if words else "any data words"
        return (
            f"I could not find a data type in this project that matches your question (I looked "
            f"for {looked}). I can only answer questions about the project's records, such as "
            f"which rows match a value or how many there are."
        )

    # -- after the schemas -----------------------------------------------------------------------

    def _after_schemas(
        self,
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        hits: list[dict[str, Any]],
    ) -> _Step:
        reading = self._read(row, others, schemas)
        if reading.problem is not None:
            return _Step(text=reading.problem)
        probes = self._probes(reading.phrases, row, others, schemas, hits)
        targets = list(
            dict.fromkeys(
                [c.manager for c in reading.conditions if c.manager != row]
                + [p.manager for p in probes if p.manager != row]
            )
        )
        locate = self.turn.rounds.get("locate")
        if locate is None and (probes or targets):
            calls: list[tuple[str, dict[str, Any]]] = [("query", p.args()) for p in probes]
            if "find_path" in self.offered:
                calls.extend(
                    ("find_path", {"from_manager": row, "to_manager": target}) for target in targets
                )
            if calls:
                return _Step(calls=calls)
        paths = self._paths(row, schemas[row], locate or [])
        filters, problem = self._filters(row, reading, locate or [], paths)
        if problem is not None:
            return _Step(text=problem)
        final = self.turn.rounds.get("final")
        label = _label_field(schemas[row])
        fields = [label, *(name for name in reading.shown if name != label)]
        if final is None:
            args: dict[str, Any] = {"manager": row, "fields": fields}
            if filters:
                args["filters"] = filters
            if reading.order is not None:
                name, descending = reading.order
                args["order_by"] = [f"-{name}" if descending else name]
            # Never one row: a one-row query is how probes are told apart in the history.
            args["limit"] = max(reading.limit, 2)
            return _Step(calls=[("query", args)])
        outcome = final[0]
        if not outcome.ok or not isinstance(outcome.result, dict):
            return _Step(text=f"The query on {row} failed: {outcome.error_message}")
        return _Step(text=self._answer(row, outcome.result, filters, label, fields[1:], reading))

    # -- reading the question --------------------------------------------------------------------

    def _read(self, row: str, others: list[str], schemas: dict[str, dict[str, Any]]) -> _Reading:
        reading = _Reading()
        reading.dates = frozenset(
            name for name, info in _fields(schemas[row]).items() if _field_kind(info) == "date"
        )
        used: set[int] = set()
        managers = [row, *others]
        for name in list(dict.fromkeys([*managers, *self._named_anywhere(schemas)])):
            for start, end in self._manager_spans(name):
                used.update(range(start, end))
        quoted = self._quoted(used)
        comparisons = self._comparisons(used)
        mentions = self._mentions(managers, schemas, used)
        for mention in mentions:
            used.update(range(mention.start, mention.end))
        for mention in mentions:
            if mention.kind == "boolean" and "exact" in _lookups(
                schemas[mention.manager], mention.field
            ):
                reading.conditions.append(
                    _Condition(mention.manager, mention.field, "exact", not mention.negated)
                )
        for comparison in comparisons:
            condition, problem = self._resolve(comparison, row, others, schemas, mentions)
            if problem is not None:
                reading.problem = problem
                return reading
            assert condition is not None
            reading.conditions.append(condition)
        self._order(reading, row, schemas[row], mentions, used)
        reading.problem = self._numbers(reading, mentions, used, schemas)
        if reading.problem is not None:
            return reading
        own_equal = {
            c.field for c in reading.conditions if c.manager == row and c.lookup == "exact"
        }
        shown = [m.field for m in mentions if m.manager == row and m.kind not in ("boolean", "id")]
        shown += [c.field for c in reading.conditions if c.manager == row and c.lookup != "exact"]
        if reading.order is not None:
            shown.append(reading.order[0])
        reading.shown = [name for name in dict.fromkeys(shown) if name not in own_equal]
        reading.phrases = quoted + self._phrases(used)
        return reading

    def _numbers(
        self,
        reading: _Reading,
        mentions: list[_Mention],
        used: set[int],
        schemas: dict[str, dict[str, Any]],
    ) -> str | None:
        """Numbers no comparison took: "quantity of 0" is an equality, anything else unclear."""
        ends = {m.end: m for m in mentions if m.kind == "number"}
        for index, token in enumerate(self.tokens):
            if index in used or not _is_number(token.text):
                continue
            before = index
            while before > 0 and self.tokens[before - 1].lower in ("of", "is", "equal", "to", "="):
                before -= 1
            mention = ends.get(before)
            if mention is not None and "exact" in _lookups(schemas[mention.manager], mention.field):
                info = _fields(schemas[mention.manager])[mention.field]
                number = float(token.text)
                value = int(number) if info.get("type") == "Int" and number.is_integer() else number
                reading.conditions.append(
                    _Condition(mention.manager, mention.field, "exact", value)
                )
                used.add(index)
                continue
            # Silently dropping a number would answer a different question.
            return (
                f'I could not tell what "{token.text}" refers to in your question, so I did not '
                'run a query. Put it in a comparison with a field, e.g. "quantity over 100".'
            )
        return None

    def _named_anywhere(self, schemas: dict[str, dict[str, Any]]) -> list[str]:
        """Relation targets of the fetched schemas: their names are not values either."""
        return [target for schema in schemas.values() for _, target in _relation_targets(schema)]

    def _quoted(self, used: set[int]) -> list[str]:
        phrases: list[str] = []
        for match in _QUOTED.finditer(self.question):
            text = (match.group(1) or match.group(2) or "").strip()
            if text:
                phrases.append(text)
                used.update(self._tokens_in(match.start(), match.end()))
        return phrases

    def _tokens_in(self, start: int, end: int) -> list[int]:
        return [
            i for i, token in enumerate(self.tokens) if token.start >= start and token.end <= end
        ]

    def _comparisons(self, used: set[int]) -> list[_Comparison]:
        found: list[_Comparison] = []
        taken: list[tuple[int, int]] = []
        for match in _BETWEEN.finditer(self.question):
            low, low_unit = _value_of(match, "")
            high, high_unit = _value_of(match, "2")
            kind = "date" if match.group("date") else "number"
            indices = self._tokens_in(match.start(), match.end())
            span = (min(indices, default=0), max(indices, default=0) + 1)
            unit = low_unit or high_unit
            found.append(_Comparison(*span, "gte", kind, low, unit, None, match.group()))
            found.append(_Comparison(*span, "lte", kind, high, unit, None, match.group()))
            taken.append((match.start(), match.end()))
            used.update(indices)
        for match in _IN_YEAR.finditer(self.question):
            # "placed in 2025": the whole year on a date field
            year = match.group("year")
            indices = self._tokens_in(match.start(), match.end())
            span = (min(indices, default=0), max(indices, default=0) + 1)
            phrase = match.group()
            found.append(_Comparison(*span, "gte", "date", f"{year}-01-01", None, None, phrase))
            found.append(_Comparison(*span, "lte", "date", f"{year}-12-31", None, None, phrase))
            taken.append((match.start(), match.end()))
            used.update(indices)
        for match in _COMPARISON.finditer(self.question):
            if any(start <= match.start() < end for start, end in taken):
                continue
            parsed = _parse_op(match.group("op"))
            if parsed is None:
                continue
            lookup, hint = parsed
            value, unit = _value_of(match, "")
            kind = "date" if match.group("date") else "number"
            if match.group("op").lower() == "on" and kind != "date":
                continue
            end = match.end("num") if kind == "number" and unit is None else match.end()
            op_words = set(match.group("op").lower().split())
            if kind == "number" and unit is None and op_words & _DATE_WORDS:
                year = int(float(value)) if re.fullmatch(r"\d{4}", value) else None
                if year is not None:  # "before 2025": a year on a date field
                    kind = "date"
                    value = f"{year}-01-01" if lookup in ("lt", "gte") else f"{year}-12-31"
            indices = self._tokens_in(match.start(), end)
            if not indices:
                continue
            phrase = self.question[match.start() : end]
            found.append(
                _Comparison(min(indices), max(indices) + 1, lookup, kind, value, unit, hint, phrase)
            )
            used.update(indices)
        return found

    def _mentions(
        self, managers: list[str], schemas: dict[str, dict[str, Any]], used: set[int]
    ) -> list[_Mention]:
        """Field names of the fetched managers in the question; the row manager claims first."""
        mentions: list[_Mention] = []
        claimed: set[int] = set()
        for manager in managers:
            fields = _fields(schemas[manager])
            last_words = [split_words(name)[-1] for name in fields if split_words(name)]
            for name, info in fields.items():
                kind = _field_kind(info)
                if kind == "id" or (name.endswith("Id") and name != "id"):
                    continue
                forms = _word_forms(name)
                if (
                    forms
                    and len(forms[0]) > 1
                    and len(forms[0][-1]) >= 4
                    and last_words.count(split_words(name)[-1]) == 1
                ):
                    forms.append(forms[0][-1:])  # "price" for unitPrice
                first_words = [split_words(other)[0] for other in fields if split_words(other)]
                if (
                    kind == "date"
                    and forms
                    and len(forms[0]) > 1
                    and first_words.count(split_words(name)[0]) == 1
                ):
                    forms.append(forms[0][:1])  # "due before 2030" is about dueDate
                for words in forms:
                    for start, end in _find(self.tokens, words):
                        if any(i in claimed or i in used for i in range(start, end)):
                            continue
                        negated = start > 0 and self.tokens[start - 1].lower in _NEGATIONS
                        mentions.append(_Mention(start, end, manager, name, kind, negated))
                        claimed.update(range(start, end))
                for index, token in enumerate(self.tokens):
                    if index in claimed or index in used or not forms:
                        continue
                    lower = token.lower
                    if kind == "boolean" and lower.startswith("non-"):
                        if singular(lower[4:]) == "".join(forms[0]):  # "non-urgent"
                            mentions.append(_Mention(index, index + 1, manager, name, kind, True))
                            claimed.add(index)
                    elif lower not in _STOPWORDS and _verb_stem(lower) == forms[0][0]:
                        # "started after 2025" is about startDate
                        mentions.append(_Mention(index, index + 1, manager, name, kind))
                        claimed.add(index)
        for mention in mentions:
            if mention.negated and mention.start > 0:
                claimed.add(mention.start - 1)
        used.update(claimed)
        return sorted(mentions, key=lambda m: (m.start, managers.index(m.manager)))

    def _resolve(
        self,
        comparison: _Comparison,
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        mentions: list[_Mention],
    ) -> tuple[_Condition | None, str | None]:
        """The field a comparison is about, and the filter value in that field's format."""
        wanted = {"date"} if comparison.kind == "date" else {"number", "measurement"}
        if comparison.kind == "number" and comparison.unit is not None:
            measured = [
                (m, n)
                for m in [row, *others]
                for n, info in _fields(schemas[m]).items()
                if _field_kind(info) == "measurement"
            ]
            if measured:
                wanted = {"measurement"}

        def usable(manager: str, name: str) -> bool:
            info = _fields(schemas[manager]).get(name, {})
            return _field_kind(info) in wanted and comparison.lookup in _lookups(
                schemas[manager], name
            )

        chosen: tuple[str, str] | None = None
        if comparison.hint is not None:
            chosen = self._hinted(comparison.hint, [row, *others], schemas, usable)
        if chosen is None:
            nearby = [m for m in mentions if usable(m.manager, m.field)]
            if nearby:

                def distance(m: _Mention) -> float:
                    if m.end <= comparison.start:
                        return comparison.start - m.end
                    return m.start - comparison.end + 0.5  # after the comparison: less likely

                best = min(nearby, key=distance)
                chosen = (best.manager, best.field)
        if chosen is None and comparison.hint is None:
            own = [name for name in _fields(schemas[row]) if usable(row, name)]
            if len(own) == 1:
                chosen = (row, own[0])
        if chosen is None:
            candidates = [
                _humanize(name)
                for name, info in _fields(schemas[row]).items()
                if _field_kind(info) in ("number", "measurement", "date")
            ]
            about = f'"{comparison.hint}"' if comparison.hint else f'"{comparison.phrase.strip()}"'
            listed = ", ".join(candidates) if candidates else "none"
            return None, (
                f"I could not tell which field of {row} {about} refers to, so I did not run a "
                f"query. Name the field in the question ({row}'s comparable fields: {listed})."
            )
        manager, name = chosen
        kind = _field_kind(_fields(schemas[manager])[name])
        value: Any = comparison.value
        if kind == "measurement":
            if comparison.unit is None:
                return None, (
                    f"{manager}.{name} is a measurement; give the value with its unit (for "
                    f'example "{comparison.value} EUR") and ask again.'
                )
            value = f"{comparison.value} {comparison.unit}"
        elif kind == "number":
            number = float(comparison.value)
            info = _fields(schemas[manager])[name]
            value = int(number) if info.get("type") == "Int" and number.is_integer() else number
        return _Condition(manager, name, comparison.lookup, value), None

    def _hinted(
        self,
        hint: str,
        managers: list[str],
        schemas: dict[str, dict[str, Any]],
        usable: Callable[[str, str], bool],
    ) -> tuple[str, str] | None:
        """The field an adjective points at: ``denser`` -> density, ``cheaper`` -> unitPrice."""
        for manager in managers:
            for name, info in _fields(schemas[manager]).items():
                if not usable(manager, name):
                    continue
                words = split_words(name)
                for stem in _stems(hint):
                    if stem in _DATE_ADJECTIVES and _field_kind(info) == "date":
                        return manager, name
                    if any(word in _SYNONYMS.get(stem, ()) for word in words):
                        return manager, name
                    if len(stem) >= 4 and any(word.startswith(stem) for word in words):
                        return manager, name
        return None

    def _order(
        self,
        reading: _Reading,
        row: str,
        schema: dict[str, Any],
        mentions: list[_Mention],
        used: set[int],
    ) -> None:
        # "at least 3" is a comparison the parser already consumed, not an ordering.
        match = next(
            (
                found
                for found in _SUPERLATIVE.finditer(self.question)
                if not any(i in used for i in self._tokens_in(found.start(), found.end()))
            ),
            None,
        )
        if match is None:
            return
        word = " ".join(match.group("word").lower().split())
        descending = word in _DESCENDING
        orderable = [str(name) for name in schema.get("order_by") or () if isinstance(name, str)]
        indices = self._tokens_in(match.start(), match.end())
        position = min(indices, default=0)
        chosen: str | None = None
        near = [m for m in mentions if m.manager == row and m.field in orderable]
        if near:
            chosen = min(near, key=lambda m: abs(m.start - position)).field
        if chosen is None:
            hint = word.split()[-1]

            def usable(manager: str, name: str) -> bool:
                return name in orderable and _field_kind(_fields(schema).get(name, {})) != "id"

            found = self._hinted(hint, [row], {row: schema}, usable)
            chosen = found[1] if found is not None else None
        used.update(indices)
        if chosen is None:
            reading.unordered = word
            return
        reading.order = (chosen, descending)
        for limit_match in _LIMIT.finditer(self.question):
            number = limit_match.group("after") or limit_match.group("before")
            span = self._tokens_in(limit_match.start(), limit_match.end())
            if int(number) > 0 and not any(i in used for i in span if i not in indices):
                reading.limit = min(int(number), RESULT_LIMIT)
                used.update(span)
                break
        else:
            spans = self._manager_spans(row)
            if spans and all(
                self.tokens[end - 1].lower == self.tokens[end - 1].base for _, end in spans
            ):
                reading.limit = 1  # "Which material has the highest density?" asks for one

    def _phrases(self, used: set[int]) -> list[str]:
        """Consecutive unclaimed content words: the values to locate."""
        phrases: list[str] = []
        current: list[_Token] = []
        for index, token in enumerate(self.tokens):
            content = (
                index not in used
                and token.lower not in _STOPWORDS
                and not _is_number(token.text)
                and not (token.lower.endswith("n't"))
            )
            if content and current:
                previous = current[-1]
                punctuated = self.question[previous.end : token.start].strip() != ""
                # "Artemis planned" is a name and a word; "Germany, Sweden" two names.
                recased = previous.text[:1].isupper() != token.text[:1].isupper()
                if punctuated or recased:
                    phrases.append(" ".join(t.text for t in current))
                    current = []
            if content:
                current.append(token)
            elif current:
                phrases.append(" ".join(t.text for t in current))
                current = []
        if current:
            phrases.append(" ".join(t.text for t in current))
        return list(dict.fromkeys(phrases))

    # -- locating values -------------------------------------------------------------------------

    def _probes(
        self,
        phrases: list[str],
        row: str,
        others: list[str],
        schemas: dict[str, dict[str, Any]],
        hits: list[dict[str, Any]],
    ) -> list[_Probe]:
        """Where each value may be: the row's own text fields, then its neighbours' names."""
        if not phrases:
            return []
        places: list[tuple[str, str]] = [(row, name) for name in _text_filters(schemas[row])]
        summaries = {str(hit["manager"]): hit for hit in hits}
        neighbours = [target for _, target in _relation_targets(schemas[row])]
        neighbours += others + list(summaries)
        for name in dict.fromkeys(neighbours):
            if name == row:
                continue
            if name in schemas:
                texts = _text_filters(schemas[name])
                if texts:
                    places.append((name, texts[0]))
            elif name in summaries:
                if "name" in (summaries[name].get("fields") or ()):
                    places.append((name, "name"))
            else:
                places.append((name, "name"))  # unknown shape: an error result is ignored
        per_phrase = [[_Probe(phrase, m, f) for m, f in places] for phrase in phrases]
        probes: list[_Probe] = []
        # Round-robin, so that every value gets its most likely places before the cap.
        for depth in range(len(places)):
            for candidates in per_phrase:
                if len(probes) < PROBE_CAP:
                    probes.append(candidates[depth])
        return probes

    def _paths(
        self, row: str, schema: dict[str, Any], locate: list[_Call]
    ) -> dict[str, list[str] | None]:
        """Relation names from the row manager to each other manager (None: unreachable)."""
        paths: dict[str, list[str] | None] = {row: []}
        for call in locate:
            if call.name != "find_path":
                continue
            target = str(call.args.get("to_manager"))
            result = call.result if call.ok and isinstance(call.result, dict) else {}
            hops = result.get("hops")
            if result.get("path") is None or not isinstance(hops, list):
                paths[target] = None
                continue
            paths[target] = [str(hop.get("relation")) for hop in hops if isinstance(hop, dict)]
        for relation, target in _relation_targets(schema):
            paths.setdefault(target, [relation])  # without find_path, direct relations still work
        return paths

    def _filters(
        self,
        row: str,
        reading: _Reading,
        locate: list[_Call],
        paths: dict[str, list[str] | None],
    ) -> tuple[dict[str, Any], str | None]:
        filters: dict[str, Any] = {}
        previous = self.turn.previous
        if (
            previous is not None
            and previous[0] == row
            and any(token.lower in _REFERENCE_WORDS for token in self.tokens)
        ):
            filters.update(previous[1])  # "which of them": keep the last answer's rows
        for condition in reading.conditions:
            route = paths.get(condition.manager)
            if route is None:
                return {}, (
                    f"I could not find how {row} relates to {condition.manager}, so I cannot "
                    f"filter {_noun(row, 2)} by {condition.manager}.{condition.field}."
                )
            key = "__".join([*route, condition.field])
            if condition.lookup != "exact":
                key += f"__{condition.lookup}"
            filters[key] = condition.value
        probes = [c for c in locate if c.name == "query" and _is_probe(c.args)]
        for phrase in reading.phrases:
            match = _best_match(phrase, probes, paths)
            if match is None:
                places = [
                    f"{c.args.get('manager')}.{next(iter(c.args.get('fields') or ['?']))}"
                    for c in probes
                    if _probed_value(c) == _probe_value(phrase)
                ]
                where = f" (I looked in {', '.join(places)})" if places else ""
                return {}, (
                    f'I found nothing called "{phrase}" in the project{where}, so I cannot answer '
                    "that. Check the spelling, or say what kind of thing it is."
                )
            key, value = match
            if key.endswith("__icontains"):
                if key in filters and filters[key] != value:
                    return {}, (
                        f'I can look for only one of "{filters[key]}" and "{value}" in '
                        f"{_path_text(key)} at a time; ask about each separately."
                    )
                filters[key] = value
                continue
            # Several exact values for one field ("Germany or Sweden"): any of them.
            base = key.removesuffix("__in")
            values = list(value) if isinstance(value, list) else [value]
            known = ([filters.pop(base)] if base in filters else []) + filters.pop(
                f"{base}__in", []
            )
            merged = list(dict.fromkeys([*known, *values]))
            if len(merged) == 1 and not key.endswith("__in"):
                filters[base] = merged[0]
            else:
                filters[f"{base}__in"] = merged
        return filters, None

    # -- the answer ------------------------------------------------------------------------------

    def _answer(
        self,
        row: str,
        result: dict[str, Any],
        filters: dict[str, Any],
        label: str,
        shown: list[str],
        reading: _Reading,
    ) -> str:
        rows = [item for item in result.get("data") or () if isinstance(item, dict)]
        total = result.get("total_count")
        has_more = bool(result.get("has_more"))
        if len(rows) > reading.limit:  # "the densest material": asked for two, show one
            keep = reading.limit
            if reading.order is not None:  # a tie with the last shown row is shown too
                key = reading.order[0]
                while keep < len(rows) and rows[keep].get(key) == rows[keep - 1].get(key):
                    keep += 1
            rows = rows[:keep]
            has_more = has_more or keep < len(result.get("data") or ())
        count = total if isinstance(total, int) else len(rows)
        conditions = " and ".join(_describe(key, value) for key, value in filters.items())
        if not rows:
            if conditions:
                return f"No {_noun(row, 2)} match {conditions}."
            return f"There are no {_noun(row, 2)}."
        at_least = "at least " if not isinstance(total, int) and has_more else ""
        verb = "is" if count == 1 else "are"
        head = f"There {verb} {at_least}{count} {_noun(row, count)}"
        if conditions:
            head += f" where {conditions}"
        if reading.order is not None:
            name, descending = reading.order
            words = ("latest", "earliest") if name in reading.dates else ("highest", "lowest")
            head += f", ordered by {_humanize(name)} ({words[0] if descending else words[1]} first)"
        items = ", ".join(_row_text(item, label, shown) for item in rows)
        text = f"{head}: {items}"
        if has_more:
            of = count if isinstance(total, int) else "more"
            text += f" (showing the first {len(rows)} of {of})"
        text += "."
        if reading.unordered is not None:
            text += (
                f' I could not tell what "{reading.unordered}" should sort by, so the list is '
                "not ordered."
            )
        if result.get("complete") is False and not has_more:
            text += " The server's answer may not be complete, so there may be more."
        return text


# -- helpers -------------------------------------------------------------------------------------


def _start_of(question: str) -> str:
    """The first :data:`MAX_QUESTION_CHARS` characters of ``question``, not ending mid-word."""
    start = question[:MAX_QUESTION_CHARS]
    space = start.rfind(" ")
    return start[:space] if space > MAX_QUESTION_CHARS // 2 else start


def _verb_stem(word: str) -> str | None:
    """``started`` -> ``start``: a verb form of a field's first word (four letters or more)."""
    for suffix in ("ing", "ed", "es", "s", "d"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return None


def _is_number(text: str) -> bool:
    return re.fullmatch(r"-?\d+(?:\.\d+)?", text) is not None


def _value_of(match: re.Match[str], suffix: str) -> tuple[str, str | None]:
    """The value of a comparison match (a date, or a number) and its unit, if it has one."""
    date = match.group(f"date{suffix}")
    if date:
        return date, None
    number = match.group(f"num{suffix}").replace(",", "")  # "1,000"
    currency = match.group(f"cur{suffix}")
    unit = match.group(f"unit{suffix}")
    if unit is not None and not (
        unit in _CURRENCIES
        or unit.lower() in _UNITS
        or (unit.isalpha() and unit.isupper() and 2 <= len(unit) <= 4)
    ):
        unit = None  # "more than 5 and": a plain word, not a unit
    if unit in _CURRENCIES:
        unit = _CURRENCIES[unit]
    if unit is None and currency:
        unit = _CURRENCIES[currency]
    return number, unit


def _parse_op(op: str) -> tuple[str, str | None] | None:
    """``(lookup, adjective)`` of a comparison operator; None when it is not one ("other than")."""
    if op in _SYMBOL_LOOKUPS:
        return _SYMBOL_LOOKUPS[op], None
    words = op.lower().split()
    if words[-1] != "than":
        phrase = " ".join(words)
        return (_WORD_LOOKUPS[phrase], None) if phrase in _WORD_LOOKUPS else None
    words = words[:-1]
    negated = words[0] in ("no", "not")
    if negated:
        words = words[1:]
    hint: str | None = None
    if len(words) == 2:  # "more expensive than"
        lookup = "gt" if words[0] == "more" else "lt"
        hint = words[1]
    elif words[0] in _NOT_COMPARISONS:
        return None
    elif words[0] in _UP_GENERIC:
        lookup = "gt"
    elif words[0] in _DOWN_GENERIC:
        lookup = "lt"
    else:
        lookup = "lt" if words[0] in _DOWN_ADJECTIVES else "gt"
        hint = words[0]
    if negated:  # "no more than 5" is "at most 5"
        lookup = {"gt": "lte", "lt": "gte"}[lookup]
    return lookup, hint


def _probe_value(phrase: str) -> str:
    """What a probe looks for: ``gears`` -> ``gear`` (names are singular); ``Artemis`` stays."""
    head, _, last = phrase.rpartition(" ")
    if last.isalpha() and last.islower() and singular(last) != last:
        return f"{head} {singular(last)}" if head else singular(last)
    return phrase


def _probed_value(call: _Call) -> str | None:
    filters = call.args.get("filters")
    if isinstance(filters, dict) and len(filters) == 1:
        return str(next(iter(filters.values())))
    return None


def _best_match(
    phrase: str, probes: list[_Call], paths: dict[str, list[str] | None]
) -> tuple[str, Any] | None:
    """The filter for ``phrase`` from its probes: an exact match first, else the first found."""
    value = _probe_value(phrase)
    # A hit must contain the value as whole words: "weigh" is not found in "Lead Ballast Weight".
    whole_words = re.compile(rf"(?<!\w){re.escape(value)}(?:s|es)?(?!\w)", re.IGNORECASE)
    contains: tuple[str, Any] | None = None
    ambiguous: tuple[str, Any] | None = None
    for call in probes:
        if _probed_value(call) != value or not call.ok or not isinstance(call.result, dict):
            continue
        data = call.result.get("data")
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            continue
        manager = str(call.args.get("manager"))
        route = paths.get(manager)
        if route is None:
            continue  # found, but not reachable from the row manager
        field_name = str((call.args.get("fields") or ["name"])[0])
        found = data[0].get(field_name)
        prefix = [*route, field_name]
        if not isinstance(found, str):
            continue
        if not whole_words.search(found):
            total = call.result.get("total_count")
            if ambiguous is None and (not isinstance(total, int) or total > 1):
                # One row is all a probe sees: "inactive" came back, but "active" may be there
                # too. Match the value itself, in the usual spellings.
                variants = [value.lower(), value.capitalize(), value.title(), value.upper(), value]
                ambiguous = ("__".join([*prefix, "in"]), list(dict.fromkeys(variants)))
            continue
        if found.casefold() in (phrase.casefold(), value.casefold()):
            return "__".join(prefix), found
        if contains is None:
            contains = ("__".join([*prefix, "icontains"]), value)
    return contains or ambiguous


def _split_key(key: str) -> tuple[list[str], str]:
    """``material__name__icontains`` -> ``(["material", "name"], "icontains")``."""
    parts = key.split("__")
    if len(parts) > 1 and parts[-1] in _LOOKUP_WORDS:
        return parts[:-1], parts[-1]
    return parts, "exact"


def _path_text(key: str) -> str:
    """The field a filter key reaches, as prose: ``parts → material → name``."""
    return " → ".join(_humanize(part) for part in _split_key(key)[0])


def _describe(key: str, value: Any) -> str:
    """``partsList__material__name`` = "Cobalt" -> ``parts → material → name is "Cobalt"``."""
    lookup = _split_key(key)[1]
    path = _path_text(key)
    if isinstance(value, list):
        shown = ", ".join(_quote(item) for item in value)
    elif lookup in ("gt", "gte", "lt", "lte"):
        shown = _format(value)
    else:
        shown = _quote(value)
    return f"{path} {_LOOKUP_WORDS[lookup]} {shown}"


def _quote(value: Any) -> str:
    if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return f'"{value}"'
    return _format(value)


def _format(value: Any) -> str:
    """A result value as text, exactly as the server gave it (no rounding)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dict) and "value" in value and "unit" in value:
        return f"{_format(value['value'])} {value['unit']}"
    if isinstance(value, list):
        return ", ".join(_format(item) for item in value)
    return str(value)


def _row_text(item: Mapping[str, Any], label: str, shown: Iterable[str]) -> str:
    name = item.get(label)
    text = _format(name) if name is not None else "(unnamed)"
    extras = [f"{_humanize(key)} {_format(item.get(key))}" for key in shown if key in item]
    return f"{text} ({', '.join(extras)})" if extras else text
