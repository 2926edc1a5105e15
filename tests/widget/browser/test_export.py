"""Export as notebook in the chat widget, in a real JupyterLab and browser (Debian chromium): the
header's button asks the notebook's kernel, which writes the conversation beside the notebook
(the kernel's working directory) under its title's name; the view says where, as text; a second
export takes the next numbered name and leaves the first file as it was. The offline provider
answers, the store is the kernel's own SQLite; nothing of ours is mocked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Page, expect

from ...jupyter_app import JupyterApp
from .knowledge_steps import QUESTION, answered
from .lab import show_chat, write_notebook

CHAT_CELL = 1
NAME = "Which parts are made of titanium"


@pytest.fixture
def export_notebook(tmp_path: Path) -> Path:
    source = f"""from gmchat_nb import Chat

chat = Chat(provider="offline", store={str(tmp_path / "chat.sqlite3")!r})
chat
"""
    return write_notebook(tmp_path / "export.ipynb", "Browser test: export.", source)


def test_the_kernel_writes_the_conversation_beside_the_notebook_and_the_view_says_where(
    open_lab: Callable[[str | Path], Page], export_notebook: Path, jupyterlab: JupyterApp
) -> None:
    page = open_lab(export_notebook)
    root = show_chat(page, CHAT_CELL)
    answered(root, QUESTION)
    status = root.locator("[data-testid=gmchat-export-status]")
    button = root.get_by_role("button", name="Export as notebook")

    button.click()
    first = jupyterlab.root / f"{NAME}.ipynb"
    expect(status).to_have_text(f"Exported to {first}", timeout=30_000)
    notebook = nbformat.read(first, as_version=4)
    nbformat.validate(notebook)
    headings = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    assert any(cell.startswith(f"## 1. {NAME}") for cell in headings)  # the question
    written = first.read_bytes()

    button.click()
    second = jupyterlab.root / f"{NAME} 1.ipynb"
    expect(status).to_have_text(f"Exported to {second}", timeout=30_000)
    assert second.is_file()
    assert first.read_bytes() == written
