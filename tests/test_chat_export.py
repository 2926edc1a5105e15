"""``Chat.to_notebook``: the conversation a notebook asked, as a notebook file nbformat accepts
(the offline provider on the demo project, a real SQLite store); and the file names a
conversation's title becomes."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import nbformat
import pytest

from gmchat_nb import Chat
from gmchat_nb.chat_export import ExportError, notebook_filename
from gmchat_nb.core.export import notebook_text
from gmchat_nb.core.session import Actor

QUESTION = "Which parts are made of steel?"
HEADING = "Which parts are made of steel"  # (the Markdown escapes the question mark)
BOB = Actor(id="local:bob", name="bob", authenticated=True)


def sources(notebook: nbformat.NotebookNode, kind: str) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == kind]


def notebooks_in(folder: Path) -> list[str]:
    """The files of ``folder`` but the store's."""
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("chat.sqlite3"))


async def test_a_conversation_becomes_a_notebook_file(tmp_path: Path) -> None:
    store = tmp_path / "chat.sqlite3"
    chat = Chat(provider="offline", store=str(store))
    try:
        turn = await chat.ask(QUESTION)
        assert turn.error is None and turn.outcomes, turn.events
        path = tmp_path / "steel.ipynb"
        notebook = chat.to_notebook(path)
    finally:
        await chat.aclose()
    written = nbformat.read(path, as_version=4)
    nbformat.validate(written)  # raises on anything nbformat 4 does not allow
    assert path.read_text(encoding="utf-8") == notebook_text(notebook)
    assert any(HEADING in text for text in sources(written, "markdown"))
    queries = [text for text in sources(written, "code") if "Part" in text]
    assert queries, sources(written, "code")
    for text in sources(written, "code"):
        # every code cell is Python (a notebook's top-level await allowed)
        compile(text, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert all(not cell.get("outputs") for cell in written.cells if cell.cell_type == "code")


async def test_an_existing_file_is_replaced_only_when_asked(tmp_path: Path) -> None:
    chat = Chat(provider="offline", store=str(tmp_path / "chat.sqlite3"))
    path = tmp_path / "mine.ipynb"
    path.write_text("my own notes", encoding="utf-8")
    try:
        await chat.ask(QUESTION)
        with pytest.raises(FileExistsError, match=r"mine\.ipynb exists"):
            chat.to_notebook(path)
        assert path.read_text(encoding="utf-8") == "my own notes"
        os.chmod(path, 0o640)
        notebook = chat.to_notebook(path, overwrite=True)
        in_memory = chat.to_notebook()  # no path: nothing is written
    finally:
        await chat.aclose()
    assert path.read_text(encoding="utf-8") == notebook_text(notebook)
    assert path.stat().st_mode & 0o777 == 0o640  # the replaced file's mode is kept
    assert notebooks_in(tmp_path) == ["mine.ipynb"]  # and no temporary file left beside it
    assert [cell.source for cell in in_memory.cells[1:]] == [
        cell.source for cell in notebook.cells[1:]
    ]  # (the first cell names the date it was made)


async def test_no_conversation_and_another_user_s_are_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "chat.sqlite3")
    with pytest.raises(ExportError) as nothing:
        Chat(provider="offline", store=store).to_notebook()
    assert nothing.value.code == "not_found"
    alice = Chat(provider="offline", store=store)
    try:
        await alice.ask(QUESTION)
        conversation = alice.conversation_id
    finally:
        await alice.aclose()
    assert conversation is not None
    # Bob names Alice's conversation: it is no conversation of his (nothing is written)
    bob = Chat(provider="offline", store=store, actor=BOB)
    with pytest.raises(ExportError) as foreign:
        bob.to_notebook(tmp_path / "theirs.ipynb", conversation_id=conversation)
    assert foreign.value.code == "not_found"
    assert not (tmp_path / "theirs.ipynb").exists()
    # A chat that never asked here exports a conversation of its user by id
    again = Chat(provider="offline", store=store, conversation_id=conversation)
    assert any(HEADING in text for text in sources(again.to_notebook(), "markdown"))


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Which parts are made of steel?", "Which parts are made of steel.ipynb"),
        ("../../etc/passwd", "etc passwd.ipynb"),
        ('Say "hi" \\ `rm -rf` <b>', "Say hi rm -rf b.ipynb"),
        ("line\nbreak\ttab\x00nul\x1b[31m", "line break tab nul [31m.ipynb"),
        ("gnp\u202eexe.ipynb", "gnp exe.ipynb.ipynb"),  # a right-to-left override removed
        ("Stückliste für März", "Stückliste für März.ipynb"),
        ("", "conversation.ipynb"),
        ("...", "conversation.ipynb"),
        (" ? * : | ", "conversation.ipynb"),
        ("x" * 300, "x" * 80 + ".ipynb"),
    ],
)
def test_a_title_becomes_a_safe_file_name(title: str, name: str) -> None:
    assert notebook_filename(title) == name
    assert "/" not in name and "\\" not in name and '"' not in name
