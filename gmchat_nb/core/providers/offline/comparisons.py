"""How comparisons, orderings and row limits are written: ``denser than 5``, ``the 3 cheapest``.

The patterns find them in the question; :func:`parse_op` and :func:`value_of` turn a match into a
filter lookup and a value, and the word lists say which field an adjective points at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "BETWEEN",
    "COMPARISON",
    "DATE_ADJECTIVES",
    "DATE_WORDS",
    "DESCENDING",
    "IN_YEAR",
    "SUPERLATIVE",
    "SYNONYMS",
    "TOP_N",
    "Comparison",
    "parse_op",
    "value_of",
]

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
COMPARISON = re.compile(_OP + r"\s*" + _VALUE.format(n=""), re.IGNORECASE)
IN_YEAR = re.compile(r"\b(?:in|during)\s+(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)
BETWEEN = re.compile(
    r"\bbetween\s+" + _VALUE.format(n="") + r"\s+and\s+" + _VALUE.format(n="2"), re.IGNORECASE
)
SUPERLATIVE = re.compile(
    r"\b(?P<word>most\s+expensive|least\s+expensive|highest|lowest|largest|smallest|biggest"
    r"|greatest|most|least|fewest|top|maximum|minimum|cheapest|densest|heaviest|lightest"
    r"|newest|oldest|latest|earliest|longest|shortest)\b",
    re.IGNORECASE,
)
TOP_N = re.compile(
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
DATE_WORDS = frozenset(
    {"before", "after", "since", "until", "till", "earlier", "later", "older", "newer"}
)
_UP_GENERIC = frozenset({"more", "greater", "higher", "larger", "bigger"})
_DOWN_GENERIC = frozenset({"less", "fewer", "lower", "smaller"})
_DOWN_ADJECTIVES = frozenset(
    {"cheaper", "lighter", "shorter", "thinner", "narrower", "slower", "colder", "earlier", "older"}
)
_NOT_COMPARISONS = frozenset({"other", "rather"})
DESCENDING = frozenset(
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
SYNONYMS: dict[str, tuple[str, ...]] = {
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
DATE_ADJECTIVES = frozenset({"old", "new", "early", "late", "recent"})
_UNITS = frozenset(
    "eur usd chf gbp sek jpy kg g mg t m cm mm km l ml h min s pcs".split()  # noqa: SIM905
)
_CURRENCIES = {"€": "EUR", "$": "USD", "£": "GBP"}


@dataclass(frozen=True, slots=True)
class Comparison:
    """``denser than 5``: a lookup, a value and what points at the field."""

    start: int  # token range
    end: int
    lookup: str
    kind: str  # "number" or "date"
    value: str  # the number or date as written
    unit: str | None
    hint: str | None  # an adjective such as "denser"
    phrase: str


def value_of(match: re.Match[str], suffix: str) -> tuple[str, str | None]:
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


def parse_op(op: str) -> tuple[str, str | None] | None:
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
