"""The mutation intent gate: did the user, in their own words, ask to change data?

What: :func:`read_intent` reads only the user's messages and says whether they ask for a
change (create, update, delete …) in English or German (here) or French, Spanish or Japanese
(:mod:`.intent_languages`), do not, or are in a language the gate cannot read
(:mod:`.readable`), when its silence means nothing and a person decides a proposed change;
:func:`asks_for_change` is its yes or no; :func:`values_from_data` lists the values of a
proposed mutation's input that the user never wrote, for the confirmation card.

Why: a model can be talked into a write by the data it reads ("set the price to 0"). A change
is only legitimate when the user asked for one, and the user's messages are the one text no
tool result can write into. So the gate does not ask the model; it looks for a change verb used
as a request: an imperative at the start of a clause ("Set the status to shipped", "please
delete part 5"), or a polite form ("can you update …", "I'd like to rename …", "kannst du …
ändern"). Questions about changes ("what changed last week?", "which suppliers were updated?")
use other forms of the verbs and are not requests; negations ("don't change anything") are
refusals. Where the messages disagree, the latest that says either way decides, so "update X"
followed by "yes" still asks, and followed by "no, don't change anything" does not.
Values the user did not write came from the data or from the model; the card shows them so the
user notices a value nobody asked for.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

from .intent_languages import clause_stance
from .invisible import strip_invisible
from .readable import can_read

__all__ = ["UNREAD_REQUEST_NOTE", "Intent", "asks_for_change", "read_intent", "values_from_data"]

UNREAD_REQUEST_NOTE: Final = (
    "Your message could not be read as asking for this change (it is in a language the change "
    "check does not read): confirm only if you asked for it."
)
"""What a confirmation card says when its ``provenance.request_unread`` is set (the widget and
the panel say the same, frontend/src/guards.ts)."""

# English change verbs and their -ing forms (for "would you mind updating", "without changing").
_VERBS: Final[dict[str, str]] = {
    "change": "changing",
    "update": "updating",
    "set": "setting",
    "rename": "renaming",
    "create": "creating",
    "add": "adding",
    "insert": "inserting",
    "delete": "deleting",
    "remove": "removing",
    "mark": "marking",
    "assign": "assigning",
    "reassign": "reassigning",
    "move": "moving",
    "increase": "increasing",
    "decrease": "decreasing",
    "raise": "raising",
    "lower": "lowering",
    "reduce": "reducing",
    "correct": "correcting",
    "fix": "fixing",
    "edit": "editing",
    "modify": "modifying",
    "replace": "replacing",
    "make": "making",
    "put": "putting",
    "record": "recording",
    "register": "registering",
    "archive": "archiving",
    "cancel": "cancelling",
    "close": "closing",
    "reopen": "reopening",
    "approve": "approving",
    "reject": "rejecting",
    "activate": "activating",
    "deactivate": "deactivating",
    "enable": "enabling",
    "disable": "disabling",
    "alter": "altering",
    "adjust": "adjusting",
    "drop": "dropping",
    "erase": "erasing",
    "touch": "touching",
}
# German imperatives (du and Sie forms start a clause) and infinitives ("bitte … ändern",
# "kannst du … löschen"): the common verbs only, since users here often write German.
_DE_IMPERATIVES: Final = (
    "ändere|änder|aktualisiere|setze|setz|lösche|lösch|erstelle|erstell|füge|lege|leg|entferne|"
    "trage|trag|korrigiere|benenne|markiere|storniere|erhöhe|senke|verringere|ersetze|bearbeite|"
    "weise|schließe|archiviere"
)
_DE_INFINITIVES: Final = (
    "ändern|aktualisieren|setzen|löschen|erstellen|anlegen|hinzufügen|entfernen|eintragen|"
    "korrigieren|umbenennen|markieren|stornieren|erhöhen|senken|verringern|ersetzen|bearbeiten|"
    "zuweisen|schließen|archivieren"
)

_BASE: Final = "|".join(_VERBS)
_ING: Final = "|".join(_VERBS.values()) + "|canceling"
# A change verb followed by what makes it a read ("create a chart", "put it in a table", "make
# sure", "add up") or a noun ("set of bolts", "record count", "close to 100").
_NOT_A_CHANGE: Final = (
    r"(?!\s+(?:(?:me|us|it|them|this|that|these|those|the|a|an|in|into|as|results?|data)\s+)"
    r"{0,4}(?:chart|plot|graph|table|list|summary|report|overview|diagram|breakdown|dataframe|"
    r"pivot|visuali[sz]ation|csv|export|spreadsheet)s?\b)(?!\s+(?:sure|up|sense|of|to|counts?)\b)"
)
_DE_NOT_A_CHANGE: Final = (
    r"(?!\s+(?:mir\s+|uns\s+)?(?:eine?n?\s+|die\s+|das\s+|den\s+)?(?:liste|tabelle|übersicht|"
    r"grafik|diagramm|auswertung|zusammenfassung|bericht|export)\b)"
)
_VERB: Final = rf"(?:{_BASE}){_NOT_A_CHANGE}(?=\s|$)"

# Words that may come before an imperative at a clause's start.
_LEAD: Final = (
    r"(?:(?:please|pls|plz|kindly|ok|okay|now|then|and|also|so|just|hey|hi|yes|yeah|yep|"
    r"alright|great|thanks|thank\s+you|first|next|finally|bitte|ja|dann|und|jetzt|auch|"
    r"go\s+ahead\s+and)\s+)*"
)
_ASK: Final = (
    r"(?:can|could|would|will)\s+you\s+(?:please\s+|kindly\s+|just\s+)?"
    r"|(?:i'?d|i\s+would|we'?d|we\s+would)\s+like\s+(?:you\s+|to\s+have\s+you\s+)?to\s+"
    r"|(?:i|we)\s+(?:want|need|wish)\s+(?:you\s+)?to\s+"
    r"|(?:let'?s|let\s+us|please|pls|kindly)\s+"
    r"|(?:i'?d|i\s+would)\s+(?:appreciate\s+it\s+if\s+you(?:\s+could)?|be\s+grateful\s+if\s+you"
    r"(?:\s+could)?)\s+"
    r"|help\s+me\s+(?:to\s+)?"
    r"|(?:is\s+it|would\s+it\s+be)\s+possible\s+(?:for\s+you\s+)?to\s+"
)

_REQUEST: Final = re.compile(
    rf"^{_LEAD}{_VERB}"  # an imperative: "set …", "please set …", "ok, now delete …"
    rf"|\b(?:{_ASK}){_VERB}"  # "can you update …", "i'd like to rename …"
    rf"|\bwould\s+you\s+mind\s+(?:{_ING})\b"
    # German: an imperative at the start, "Sie" form, or a request with the infinitive at the end
    rf"|^{_LEAD}(?:{_DE_IMPERATIVES})\b{_DE_NOT_A_CHANGE}"
    rf"|^{_LEAD}(?:{_DE_INFINITIVES})\s+sie\b"
    rf"|\b(?:(?:kannst|könntest|würdest)\s+du|(?:können|könnten|würden)\s+sie|bitte|"
    rf"ich\s+(?:möchte|will|würde\s+gerne|hätte\s+gerne|muss)|wir\s+(?:möchten|wollen|müssen))"
    rf"\b.*\b(?:{_DE_INFINITIVES})\b"
)
_REFUSAL: Final = re.compile(
    rf"\b(?:don'?t|do\s+not|dont|never|no\s+need\s+to|without|shouldn'?t|should\s+not|"
    rf"mustn'?t|must\s+not|won'?t|stop)\s+(?:\w+\s+){{0,2}}?(?:{_BASE}|{_ING})\b"
    rf"|\b(?:{_BASE})\s+(?:nothing|nichts)\b"
    rf"|\b(?:nicht|nichts|keine?n?)\s+(?:\w+\s+){{0,3}}?(?:{_DE_INFINITIVES})\b"
    rf"|^(?:{_DE_IMPERATIVES})\s+(?:\w+\s+){{0,3}}?(?:nichts|nicht)\b"
)
# Clauses end at sentence marks (Japanese ones too), semicolons, colons, commas and line breaks;
# "but" and "and then" start a new one ("don't just show it, update it").
_CLAUSE: Final = re.compile(
    r"([.!?;:,\n。、]+|\s+(?:but|aber|mais|pero|and\s+then|und\s+dann|et\s+puis|y\s+luego)\s+)"
)
_APOSTROPHES: Final = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})

Stance = Literal["change", "no_change", "neutral"]
Intent = Literal["asked", "not_asked", "unread"]
"""What the user's messages say: a change was asked for, it was not, or the gate cannot read
their language (:mod:`.readable`) and so cannot tell."""


def _stance(text: str) -> Stance:
    """What one message says about changing data."""
    normal = unicodedata.normalize("NFKC", strip_invisible(text))
    plain = " ".join(normal.translate(_APOSTROPHES).casefold().split())
    refused = False
    parts = _CLAUSE.split(plain)  # clauses and, after each, what ended it
    for clause, ending in zip(parts[::2], [*parts[1::2], ""], strict=True):
        question = "?" in ending or clause.lstrip().startswith("¿")
        clause = clause.strip(" -\"'()[]¿¡「」『』…")
        if not clause:
            continue
        other = clause_stance(clause, question=question)  # French, Spanish, Japanese
        if _REFUSAL.search(clause) or other == "no_change":
            refused = True  # a refusal outweighs a request in the same clause
        elif _REQUEST.search(clause) or other == "change":
            return "change"
    return "no_change" if refused else "neutral"


def read_intent(texts: Sequence[str]) -> Intent:
    """What the user's messages ``texts`` (oldest first) say about changing data: the latest
    message that asks for a change or refuses one decides; when none does, ``unread`` if the
    gate cannot read the language of one of them (its silence then means nothing), else
    ``not_asked``."""
    for text in reversed(texts):
        stance = _stance(text)
        if stance != "neutral":
            return "asked" if stance == "change" else "not_asked"
    if any(not can_read(strip_invisible(text)) for text in texts):
        return "unread"
    return "not_asked"


def asks_for_change(texts: Sequence[str]) -> bool:
    """Whether the user's messages ``texts`` (oldest first) ask to change data in a language
    the gate reads: the latest message that asks for a change or refuses one decides."""
    return read_intent(texts) == "asked"


# -- values the user did not write -----------------------------------------------------------

_NUMBER: Final = re.compile(r"\d+(?:[.,']\d+)*")


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _numbers(text: str) -> set[Decimal]:
    """Every number ``text`` writes, read every way it could be meant: "1,250" as 1250 and as
    1.25 (German decimal comma), "12.5" as 12.5 (and as 125, a German thousands point)."""
    found: set[Decimal] = set()
    for token in _NUMBER.findall(text):
        readings = {
            token.replace(",", "").replace("'", ""),
            token.replace(".", "").replace("'", "").replace(",", "."),
        }
        for reading in readings:
            try:
                found.add(abs(Decimal(reading)))
            except InvalidOperation:
                continue  # "1.2.3": no number either way
    return found


def _as_decimal(number: int | float) -> Decimal | None:
    if isinstance(number, float) and not math.isfinite(number):
        return None
    # str() of a float is its shortest repr: 12.5 stays 12.5, not 12.4999…
    return abs(Decimal(str(number)))


def values_from_data(mutation_input: Mapping[str, Any], user_texts: Sequence[str]) -> list[str]:
    """The paths (``supplier.name``, ``lines[0].price``) of the string and number leaves of
    ``mutation_input`` that the user's ``user_texts`` do not contain: strings as a
    case-insensitive substring (whitespace collapsed), numbers as a number written in any form
    (12 as "12" or "12.0", 12.5 as "12.5" or "12,5"; the sign is not compared). Booleans and
    None are ignored: the user rarely writes them, and they carry no text of their own."""
    said = " ".join(strip_invisible("\n".join(user_texts)).casefold().split())
    numbers = _numbers(said)
    missing: list[str] = []
    for path, value in _leaves(mutation_input, ""):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            wanted = " ".join(strip_invisible(value).casefold().split())
            if wanted not in said:
                missing.append(path)
        elif isinstance(value, int | float):
            number = _as_decimal(value)
            if number is None or number not in numbers:
                missing.append(path)
    return missing
