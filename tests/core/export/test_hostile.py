"""Hostile content stays inert in an exported notebook: the corpus of tests/adversarial.py (and
its fuzzed text) as a question, as data, as filters, as a chart's title, as a change's input and
as the answer. In Markdown cells nothing of it renders as HTML, an image, a link to anything but
a web page, or math (two renderers, and MathJax's own rules, checked in rendering.py); in code
cells it is only ever inside a string literal: every name and comment of the code is the
exporter's own."""

from __future__ import annotations

import ast
import asyncio
import io
import re
import tokenize
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gmchat_nb import Chat
from gmchat_nb.core.export import conversation_notebook
from gmchat_nb.core.export.cells import CHART_ARGUMENTS
from gmchat_nb.core.export.markdown import answer, plain
from gmchat_nb.core.text import clean_text

from ...adversarial import HOSTILE_TEXT, text
from .conversations import play_hostile, play_reads
from .rendering import problems, rendered_text

hostile = st.one_of(
    text,
    st.sampled_from(HOSTILE_TEXT),
    st.lists(st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=20)), max_size=5).map(
        "".join
    ),
)


@settings(
    max_examples=300, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
)
@given(hostile)
def test_any_text_is_shown_as_it_is_and_stays_inert(value: str) -> None:
    shown = plain(value)
    assert problems(shown) == [], shown
    # every character shown as it is (whitespace as a renderer spaces it)
    expected = clean_text(value).replace("\x00", "\ufffd")
    assert rendered_text(shown).split() == expected.split()
    assert problems(answer(value)) == []


def test_an_answer_keeps_its_markdown_and_loses_only_what_would_be_markup() -> None:
    kept = (
        "Copper parts: **five**, *mostly* in stock.\n\n"
        "- Copper Terminal: 900\n- Heat Sink: 150\n\n"
        "| part | stock |\n|---|---|\n| Copper Coil | 0 |\n\n"
        "See [the supplier](https://gm.example/suppliers) or `partList`.\n\n# Heading\n\n> quote"
    )
    assert answer(kept) == kept
    assert rendered_text(answer("Bolts cost $5 and nuts $1; a\\b < c & d")) == (
        "Bolts cost $5 and nuts $1; a\\b < c & d"
    )
    # an image is at most the text of a link, a script link is text
    assert "<img" not in rendered_text(answer("![x](https://evil.example/p.png)"))
    assert rendered_text(answer("[click](javascript:alert(1))")) == "[click](javascript:alert(1))"


@pytest.fixture(scope="module")
def allowed_code(tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], set[str]]:
    """The names and comments the exporter's own code cells use (a benign conversation's)."""

    async def export() -> Any:
        chat = await play_reads(str(tmp_path_factory.mktemp("benign") / "chat.sqlite3"))
        try:
            return await _notebook(chat)
        finally:
            await chat.aclose()

    notebook = asyncio.run(export())
    names: set[str] = set(CHART_ARGUMENTS)  # every keyword a chart cell may write
    comments: set[str] = set()
    for source in _code(notebook):
        found_names, found_comments, _ = _tokens(source)
        names |= found_names
        comments |= found_comments
    return names, comments


async def _notebook(chat: Chat) -> Any:
    session = await chat.session()
    assert chat.conversation_id is not None
    return conversation_notebook(session.store, chat.conversation_id, settings=chat.settings)


def _code(notebook: Any) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def _tokens(source: str) -> tuple[set[str], set[str], list[str]]:
    """A cell's names (its frames' numbers made generic), comments and f-strings, and its string
    literals."""
    names: set[str] = set()
    comments: set[str] = set()
    strings: list[str] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME:
            names.add(re.sub(r"^frame_\d+_\d+$", "frame_N_M", token.string))
        elif token.type == tokenize.COMMENT:
            comments.add(token.string)
        elif token.type == tokenize.STRING and token.string[:1] in "fF":
            comments.add(token.string)  # an f-string runs code: the exporter's own only
        elif token.type == tokenize.STRING:
            strings.append(token.string)
    return names, comments, strings


async def test_the_hostile_corpus_is_inert_in_markdown_and_only_literals_in_code(
    tmp_path: Path, allowed_code: tuple[set[str], set[str]]
) -> None:
    chat = await play_hostile(str(tmp_path / "chat.sqlite3"))
    try:
        notebook = await _notebook(chat)
    finally:
        await chat.aclose()
    markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    code = _code(notebook)
    # it reached every place: the question, each change, the evidence, the answer, the code
    assert len([cell for cell in notebook.cells if cell.id.endswith("-change")]) == len(
        HOSTILE_TEXT
    )
    [answered] = [cell.source for cell in notebook.cells if cell.id.endswith("-answer")]
    words = " ".join(rendered_text(answered).split())
    for value in HOSTILE_TEXT:  # the answer shows each as it is: text, not markup
        assert " ".join(clean_text(value).split()) in words, value
    for cell in markdown:
        assert problems(cell) == [], cell

    names, comments = allowed_code
    literals: list[str] = []
    for source in code:
        compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        found_names, found_comments, strings = _tokens(source)
        assert found_names <= names, found_names - names
        assert found_comments <= comments, found_comments - comments
        literals += [str(ast.literal_eval(string)) for string in strings]
    # the data is there, as literals only: the filter's values and the chart's title
    for value in HOSTILE_TEXT:
        assert any(clean_text(value) in literal for literal in literals), value
