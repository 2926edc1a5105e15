"""Text of a conversation in a notebook's Markdown cells: shown as written, and inert.

A Markdown cell is rendered by JupyterLab (marked, its HTML sanitizer, then MathJax over the
rendered text: ``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]`` and ``\\begin{…}`` become math there),
by nbconvert, VS Code or GitHub. Text from a model or from data must not become raw HTML, a
script, an image fetched from anywhere, a link to anything but a web page or a mail address, or
math. Two writers:

- :func:`plain` -- text shown exactly as it is, on one line (a question, a manager, filters, a
  change's input, an error): every ASCII punctuation mark backslash-escaped, ``<`` and ``&`` as
  entities, and ``\\`` and ``$`` written as ``&#92;&#92;`` and ``&#92;&#36;``: the rendered text
  holds ``\\\\`` and ``\\$``, which MathJax (``processEscapes``, on in JupyterLab) shows as ``\\``
  and ``$`` and never reads as math. Entities, unlike backslashes, are invisible to JupyterLab's
  search for math in the Markdown source.
- :func:`answer` -- the model's answer keeps its Markdown (emphasis, lists, tables, code) with
  raw HTML, images, entities and math defused the same way, and its backslash escapes written
  as entities (the source then holds no backslash at all: a renderer that keeps one raw, in a
  bare URL's text, has none to keep); then markdown-it-py parses it as a renderer with raw HTML
  on would, and anything left that is not plain Markdown (HTML, an image, a link that is not
  ``http(s)``/``mailto``) sends the whole answer through :func:`plain`.

Inside code spans the escapes show as written (``&#92;&#36;``): the price of never having to
agree with every renderer on where a code span ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..text import clean_text

__all__ = ["SAFE_SCHEMES", "answer", "inert", "plain"]

SAFE_SCHEMES: Final = ("http://", "https://", "mailto:")
"""The only link targets an exported answer keeps (a web page, a mail address)."""

_BACKSLASH: Final = "&#92;&#92;"  # renders as \\, which MathJax shows as one backslash
_DOLLAR: Final = "&#92;&#36;"  # renders as \$, which MathJax shows as a dollar sign
_ENTITIES: Final = {"\\": _BACKSLASH, "$": _DOLLAR, "<": "&lt;", "&": "&amp;"}
_BLANKS: Final = " \t"
_PLAIN: Final = re.compile(r"[!-/:-@\[-`{-~]|\r\n?|\n")
# In an answer: a backslash and what it escapes (if anything), the characters that start raw
# HTML, entities and math, and the start of an image.
_ANSWER: Final = re.compile(r"\\[!-/:-@\[-`{-~]?|[$<&]|!\[")


class _EveryLink(MarkdownIt):
    """markdown-it keeping every link whatever its scheme, so that each is judged here."""

    def validateLink(self, url: str) -> bool:  # markdown-it's name
        return True


# What a renderer with raw HTML on (as JupyterLab's marked is) makes of a Markdown text.
_PARSER: Final = _EveryLink("commonmark", {"html": True}).enable(["table", "strikethrough"])
_FORBIDDEN: Final = frozenset({"html_block", "html_inline", "image"})


def _plain_mark(match: re.Match[str]) -> str:
    mark = match.group()
    if mark[0] in "\r\n":
        return " "
    return _ENTITIES.get(mark) or "\\" + mark


def plain(text: str) -> str:
    """``text`` as Markdown that renders exactly as ``text`` on one line (line breaks become
    spaces; spaces and tabs around it, which a renderer drops or reads as a code block's
    indent, go), with nothing in it Markdown, HTML or MathJax would read as markup; lone
    surrogates become U+FFFD."""
    return _PLAIN.sub(_plain_mark, clean_text(text)).strip(_BLANKS)


def _answer_mark(match: re.Match[str]) -> str:
    mark = match.group()
    if mark == "![":
        return "!&#91;"  # a link's text at most, never an image
    if mark[0] != "\\":
        return _ENTITIES[mark]
    escaped = mark[1:]
    if escaped in ("\\", "$"):
        return _ENTITIES[escaped]  # the answer shows one backslash, one dollar sign
    if escaped:
        # an escaped mark renders as that mark: as an entity it does too, and no backslash is
        # left where a renderer keeps it raw (a bare URL's text, which MathJax reads)
        return f"&#{ord(escaped)};"
    return _BACKSLASH  # a backslash before a letter (\begin, \href) or a line's end: itself


def answer(text: str) -> str:
    """The model's Markdown ``text`` for a notebook: its formatting kept, nothing in it raw
    HTML, an image, an entity or math; when a renderer would still find anything but plain
    Markdown in it (a link to anything but a web page or a mail address), :func:`plain`."""
    text = clean_text(text)
    written = _ANSWER.sub(_answer_mark, text)
    return written if inert(written) else plain(text)


def inert(markdown: str) -> bool:
    """Whether a renderer with raw HTML on finds only plain Markdown in ``markdown``: no HTML,
    no image, and links only to web pages and mail addresses."""
    return _inert(_PARSER.parse(markdown))


def _inert(tokens: Iterable[Token]) -> bool:
    stack = list(tokens)
    while stack:
        token = stack.pop()
        if token.type in _FORBIDDEN:
            return False
        if token.type == "link_open":
            target = str(token.attrGet("href") or "").strip().lower()
            if not target.startswith(SAFE_SCHEMES):
                return False
        stack.extend(token.children or ())
    return True
