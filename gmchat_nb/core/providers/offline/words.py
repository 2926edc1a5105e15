"""The question as words: tokens, how names are written in prose, and words that carry no value."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...project.names import normalize_key, singular, split_words

__all__ = [
    "NEGATIONS",
    "REFERENCE_WORDS",
    "STOPWORDS",
    "Token",
    "adjective_stems",
    "find_words",
    "is_number",
    "tokenize",
    "verb_stem",
    "word_forms",
]

# Words that carry no value to look up: question scaffolding, common verbs of the domain and the
# comparison vocabulary the comparison parser already consumed, and the words that ask for a chart
# (charting.py reads those).
STOPWORDS = frozenset(
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
    plot plots chart charts graph graphs diagram histogram pie draw visualise visualize scatter
    distribution trend time timeline
    """.split()  # noqa: SIM905
)
REFERENCE_WORDS = frozenset({"them", "those", "these", "they", "ones"})
NEGATIONS = frozenset({"not", "non", "no", "never", "isn't", "aren't", "wasn't", "weren't"})
_TOKEN = re.compile(r"\w(?:[\w'’.\-]*\w)?")


@dataclass(frozen=True, slots=True)
class Token:
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


def tokenize(text: str) -> list[Token]:
    """The words of ``text`` with their positions."""
    return [Token(match.group(), match.start(), match.end()) for match in _TOKEN.finditer(text)]


def word_forms(name: str) -> list[list[str]]:
    """How a camelCase name is written in prose: ``unitPrice`` -> ``unit price``."""
    words = [singular(word) for word in split_words(name)]
    return [words] if words else []


def find_words(tokens: Sequence[Token], words: Sequence[str]) -> list[tuple[int, int]]:
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


def adjective_stems(word: str) -> list[str]:
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


def verb_stem(word: str) -> str | None:
    """``started`` -> ``start``: a verb form of a field's first word (four letters or more)."""
    for suffix in ("ing", "ed", "es", "s", "d"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return None


def is_number(text: str) -> bool:
    """Whether ``text`` is a plain number (``5``, ``-2.5``), as a comparison writes one."""
    return re.fullmatch(r"-?\d+(?:\.\d+)?", text) is not None
