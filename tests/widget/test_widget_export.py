"""The widget's **Export as notebook** on the kernel side (``export_notebook`` answered with
``notebook_exported``): the conversation written with ``Chat.to_notebook`` into the kernel's
working directory under its title's name, never over a file (numbered names), and every refusal
answered with its code, never raised; and the front end's name rule (``notebookFileName``, for
the side panel) the same as the kernel's and the server's (``chat_export.notebook_filename``).

The front end is replaced by the recording comm of test_widget.py; the widget, the chat, the
offline provider, the store, the exporter and the demo project are real.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from gmchat_nb import Chat
from gmchat_nb.chat_export import notebook_filename
from gmchat_nb.widget import ChatWidget
from gmchat_nb.widget.export import export_answer, numbered_name

from .test_front_end import STATIC, node
from .test_widget import RecordingComm

QUESTION = "Which parts are made of titanium?"
NAME = "Which parts are made of titanium.ipynb"
HEADING = "## 1. Which parts are made of titanium"  # (its "?" escaped as Markdown)


@pytest.fixture
async def widget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[ChatWidget, RecordingComm]]:
    """A widget whose kernel works in ``tmp_path`` (where a notebook's kernel starts: beside
    the notebook)."""
    monkeypatch.chdir(tmp_path)
    chat = Chat(provider="offline", store=str(tmp_path / "chat.sqlite3"))
    widget = ChatWidget(chat, namespace={})
    comm = RecordingComm()
    widget.comm = comm
    yield widget, comm
    await chat.aclose()


async def export(widget: ChatWidget, comm: RecordingComm, request: Any = None) -> dict[str, Any]:
    """Press Export as notebook as the view does; the kernel's one answer to it."""
    request = f"x{len(comm.messages)}" if request is None else request
    before = len(comm.of("notebook_exported"))
    widget.dispatch({"type": "export_notebook", "request": request})
    for _ in range(1000):
        answers = comm.of("notebook_exported")[before:]
        if answers:
            [answer] = answers
            return answer
        await asyncio.sleep(0.01)
    raise AssertionError("no notebook_exported answer")


def notebooks_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.ipynb"))


def markdown_of(path: Path) -> str:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert all(not cell.get("outputs") for cell in notebook.cells)  # written without outputs
    return "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


async def test_the_conversation_is_written_beside_the_notebook_and_never_over_a_file(
    widget: tuple[ChatWidget, RecordingComm], tmp_path: Path
) -> None:
    chat_widget, comm = widget
    await chat_widget.run_turn(QUESTION)

    first = await export(chat_widget, comm, "r1")
    assert first == {"type": "notebook_exported", "request": "r1", "path": str(tmp_path / NAME)}
    assert HEADING in markdown_of(tmp_path / NAME)
    written = (tmp_path / NAME).read_bytes()

    second = await export(chat_widget, comm)
    assert second["path"] == str(tmp_path / "Which parts are made of titanium 1.ipynb")
    assert (tmp_path / NAME).read_bytes() == written  # the first one is left as it was
    assert HEADING in markdown_of(Path(second["path"]))

    # a file of the analyst's own under the next name is skipped, and kept
    mine = tmp_path / "Which parts are made of titanium 2.ipynb"
    mine.write_text("my own notes")
    third = await export(chat_widget, comm)
    assert third["path"] == str(tmp_path / "Which parts are made of titanium 3.ipynb")
    assert mine.read_text() == "my own notes"
    assert notebooks_in(tmp_path) == sorted(
        [
            NAME,
            "Which parts are made of titanium 1.ipynb",
            "Which parts are made of titanium 2.ipynb",
            "Which parts are made of titanium 3.ipynb",
        ]
    )


async def test_nothing_to_export_is_answered_with_why_and_writes_nothing(
    widget: tuple[ChatWidget, RecordingComm], tmp_path: Path
) -> None:
    chat_widget, comm = widget
    none_yet = await export(chat_widget, comm, "r1")
    assert none_yet["request"] == "r1" and "path" not in none_yet
    assert none_yet["error"]["code"] == "not_found"
    assert none_yet["error"]["message"]

    chat_widget.dispatch({"type": "new_conversation"})
    for _ in range(500):
        if comm.of("snapshot"):
            break
        await asyncio.sleep(0.01)
    empty = await export(chat_widget, comm)
    assert empty["error"]["code"] == "empty" and empty["error"]["message"]
    assert notebooks_in(tmp_path) == []

    # a request id that is not text is answered all the same (without one)
    odd = await export(chat_widget, comm, {"not": "text"})
    assert odd["request"] is None and odd["error"]["code"] == "empty"
    assert comm.of("error") == []  # the export never became a bad_event


async def test_a_folder_that_cannot_be_written_says_so(
    widget: tuple[ChatWidget, RecordingComm], tmp_path: Path
) -> None:
    chat_widget, _comm = widget
    await chat_widget.run_turn(QUESTION)
    not_a_folder = tmp_path / "notes.txt"
    not_a_folder.write_text("a file, not a folder")
    answer = await export_answer(chat_widget.chat, {"request": "r1"}, not_a_folder)
    assert answer["error"]["code"] == "not_written"
    assert str(not_a_folder / NAME) in answer["error"]["message"]
    assert not_a_folder.read_text() == "a file, not a folder"


def test_numbered_names_count_up_before_the_extension() -> None:
    assert [numbered_name("Parts.ipynb", n) for n in (0, 1, 12)] == [
        "Parts.ipynb",
        "Parts 1.ipynb",
        "Parts 12.ipynb",
    ]
    assert numbered_name("v1.2 parts.ipynb", 2) == "v1.2 parts 2.ipynb"
    assert numbered_name("Parts", 2) == "Parts 2"


TITLES = [
    QUESTION,
    "Umsatz für Q3 — Übersicht",
    "../../etc/passwd",
    "a\\b:c*d?e\"f<g>h|i`j'k",
    "tab\there\nnew\x00line\x85next\x1fend",
    "invoice\u202efdp.exe",
    "zero\u200bwidth\u00a0space\u3000ideographic\u2028line",
    "   ...trailing dots...  ",
    "e\u0301",
    '<img src=x onerror="window.__pwned=1">',
    "",
    "   ",
    "...",
    "\u202e\u2066",
    "word " * 40,
    "😀" * 100,
    "日本語の質問ですか？",
    "soft\u00adhyphen and \ufeffBOM",
]


def test_the_front_end_names_a_file_as_the_kernel_and_the_server_do() -> None:
    """The side panel makes a name from a title it holds with ``notebookFileName``
    (frontend/src/notebook-export.ts); the kernel and the server's route with
    ``notebook_filename``: the same title gives the same name."""
    script = (
        f"const m = await import({json.dumps((STATIC / 'chat.js').as_uri())});"
        f"console.log(JSON.stringify({json.dumps(TITLES)}.map((t) => m.notebookFileName(t))));"
    )
    done = subprocess.run(
        [node(), "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [notebook_filename(title) for title in TITLES]
