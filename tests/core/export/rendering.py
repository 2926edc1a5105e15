"""A notebook's Markdown as renderers show it, and what inert means there: the HTML of
nbconvert's renderer (mistune, raw HTML passed through, as JupyterLab's marked does) and of
markdown-it-py with raw HTML on, held to an allow-list of tags and attributes (links only to web
pages, mail addresses and the page's own headings), and the rendered text held to what MathJax,
which JupyterLab runs over a rendered cell, never reads as math."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from nbconvert.filters.markdown_mistune import markdown2html_mistune

TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre", "ul",
     "ol", "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a"}
)  # fmt: skip
SKIPPED_BY_MATHJAX = frozenset({"code", "pre"})
_MARKDOWN_IT = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def _allowed(tag: str, name: str, value: str) -> bool:
    """The attributes the renderers write themselves: heading anchors, table alignment, a code
    block's language, a list's start."""
    return (
        (tag, name) in {("a", "class"), ("h1", "id"), ("h2", "id"), ("h3", "id"), ("ol", "start")}
        or (tag in ("th", "td") and name == "style")
        or (tag == "code" and name == "class" and value.startswith("language-"))
    )


class _Inspector(HTMLParser):
    """Every element and attribute of an HTML text, and its text outside code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.problems.append(f"<{tag}>")
        for name, value in attrs:
            if tag == "a" and name == "href":
                if not re.match(r"(https?://|mailto:|#)", value or "", re.IGNORECASE):
                    self.problems.append(f"a href={value!r}")
            elif not _allowed(tag, name, value or ""):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag in SKIPPED_BY_MATHJAX:
            self._code += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_BY_MATHJAX:
            self._code -= 1

    def handle_data(self, data: str) -> None:
        self.text.append("\x00" if self._code else data)  # code is a boundary, never math


def math_in(text: str) -> list[str]:
    """What MathJax, as JupyterLab configures it (``$``, ``$$``, ``\\(``, ``\\[`` delimiters,
    environments, ``processEscapes``), would start math at in a rendered text."""
    found = []
    for match in re.finditer(r"\\\\|\\\$|\$|\\\(|\\\[|\\begin", text):
        if match.group() not in ("\\\\", "\\$"):  # MathJax's escapes: a backslash, a dollar
            found.append(text[max(0, match.start() - 20) : match.end() + 20])
    return found


def problems(markdown: str) -> list[str]:
    """What is not inert in ``markdown`` as both renderers render it (empty: inert)."""
    found = []
    for renderer, html in (
        ("mistune", markdown2html_mistune(markdown)),
        ("markdown-it", _MARKDOWN_IT.render(markdown)),
    ):
        inspector = _Inspector()
        inspector.feed(html)
        inspector.close()
        found += [f"{renderer}: {problem}" for problem in inspector.problems]
        found += [f"{renderer}: math at {m!r}" for m in math_in("".join(inspector.text))]
    return found


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def rendered_text(markdown: str) -> str:
    """The text a reader sees of ``markdown`` (markdown-it's rendering), MathJax's escapes
    (``\\\\``, ``\\$``) shown as JupyterLab shows them."""
    parser = _Text()
    parser.feed(_MARKDOWN_IT.render(markdown))
    parser.close()
    return re.sub(r"\\([\\$])", r"\1", "".join(parser.parts)).strip()
