"""Hypothesis strategies for adversarial input, shared by the fuzz tests: deep nesting, lone
surrogates, huge strings, wrong types, hidden manager names — and the check that a hidden
manager's name never comes back unless the caller wrote it."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

# The fuzzed projects expose these three; the inventory demo's other managers are hidden.
EXPOSED = ["Material", "Part", "Project"]
HIDDEN = ["Supplier", "PurchaseOrder", "AuditSecret"]
# How a hidden manager would show: its name, GraphQL type or root, a field or id reaching it.
# (Part's description says "...material and supplier." in prose: a developer's words, kept.)
_LEAKS = {
    "Supplier": re.compile(
        r"\bSupplier(Type|List|Manager)?\b|['\"]supplier(Id|List|_id)?['\"]|\bsupplierList\b"
    ),
    "PurchaseOrder": re.compile(r"purchase[ _]?orders?", re.IGNORECASE),
    "AuditSecret": re.compile(r"audit[ _]?secrets?", re.IGNORECASE),
}

surrogates = st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]),
    min_size=1,
    max_size=3,
)
words = st.sampled_from(
    ["Part", "parts", "name", "Steel", "material", "Apollo", "quantity", "id", "items", "*"]
)
hidden_names = st.sampled_from(
    [*HIDDEN, "supplier", "suppliers", "purchase orders", "auditSecretList", "SupplierType"]
)
huge = st.sampled_from([20_000, 100_000, 1_000_000]).map(lambda n: "steel " * (n // 6))


class Nested(list[Any]):
    """A list nested ``depth`` levels deep (built without recursion), with a short repr so a
    failing example can be printed."""

    def __init__(self, depth: int) -> None:
        value: list[Any] = []
        for _ in range(depth - 2):
            value = [value]
        super().__init__([value])
        self.depth = depth

    def __repr__(self) -> str:
        return f"Nested({self.depth})"


deep = st.sampled_from([40, 900, 5_000]).map(Nested)
text = st.one_of(
    st.text(max_size=30),
    words,
    hidden_names,
    st.tuples(words, surrogates).map("".join),
    huge,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
)
json_values = (
    st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.one_of(words, text), children, max_size=4)
        ),
        max_leaves=10,
    )
    | deep
)


def tool_arguments(keys: list[str]) -> st.SearchStrategy[Any]:
    """A tool's arguments: mostly its own keys with adversarial values, sometimes not a dict."""
    own = st.dictionaries(st.sampled_from(keys), json_values, max_size=len(keys))
    plausible = st.fixed_dictionaries(
        {key: st.one_of(words, hidden_names, json_values) for key in keys}
    )
    return st.one_of(own, plausible, json_values, st.text(max_size=40))


TOOL_KEYS = {
    "search_managers": ["query", "limit"],
    "get_manager_schema": ["manager"],
    "find_path": ["from_manager", "to_manager"],
    "query": ["manager", "fields", "filters", "exclude", "order_by", "limit", "offset", "root"],
    "mutate": ["mutation", "input"],
}
tool_names = st.one_of(
    st.sampled_from(sorted(TOOL_KEYS)),
    st.sampled_from(["query_part", "query_supplier", "delete_everything"]),
    st.integers(),
    st.none(),
    text,
)
tool_calls = st.sampled_from(sorted(TOOL_KEYS)).flatmap(
    lambda name: st.tuples(st.just(name), tool_arguments(TOOL_KEYS[name]))
) | st.tuples(tool_names, json_values)


def leaked(output: Any, given: Any) -> list[str]:
    """The hidden managers whose names appear in ``output`` but not in what the caller gave."""
    said = _dump(output)
    asked = _dump(given).lower()
    found = []
    compact = asked.replace(" ", "").replace("_", "")
    for name, pattern in _LEAKS.items():
        if name.lower() in compact:
            continue  # the caller wrote it; an echo reveals nothing
        if pattern.search(said):
            found.append(name)
    return found


def _dump(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str)
    except RecursionError:  # a Nested input: its repr is short and holds no names
        return repr(value)


# Text that would be markup, code or math where a notebook renders or runs it: raw HTML and
# scripts, images from anywhere, links to scripts, entities that spell tags, MathJax, Python that
# would run outside a string literal, invisible and bidi characters, a lone surrogate.
HOSTILE_TEXT = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "![tracker](https://evil.example/pixel.png)",
    "![ref][pixel]\n\n[pixel]: https://evil.example/pixel.png",
    "[click](javascript:window.__pwned=3)",
    "[ref link][run]\n\n[run]: JavaScript:window.__pwned=4",
    "<https://evil.example/autolink> <javascript:alert(5)>",
    '<a href="https://evil.example">a</a><!-- a comment -->',
    "&lt;script&gt;alert(6)&lt;/script&gt; &#60;img src=x onerror=alert(7)&#62;",
    "<svg onload=alert(8)></svg><iframe src=https://evil.example></iframe>",
    "$\\href{javascript:alert(9)}{click}$ costs $5 and $$x^2$$",
    "\\(x\\) \\[y\\] \\begin{equation}z\\end{equation} &#36;w&#36; \\$v\\$",
    "```\n<script>alert(10)</script>\n```",
    "`<img src=x onerror=alert(11)>`",
    "''')\nimport os; os.system('touch /tmp/pwned')  #",
    '"""\nimport os\nos.system("echo pwned")\n"""',
    "\\'; __import__('os').system('id'); '",
    "\nPROJECT = 'https://evil.example/graphql'\nHEADERS = {'x': 1}\n",
    "{{ frame }} ${frame} %(frame)s {0.__class__}",
    "invoice\u202egnp.exe and tag\U000e0041\U000e0042 and zero\u200bwidth",
    "lone \ud800 surrogate",
]
