"""Knowledge in the chat widget, in a real JupyterLab and browser (Debian chromium): a finished
turn saved as a verified query, a definition and a flagged note added in the knowledge view, the
verified query recalled and the answer marked "Verified query: <name>" in a new conversation,
then deleted and gone (knowledge_steps.py tells the story step by step). The offline provider
answers, the store is the kernel's own SQLite; nothing of ours is mocked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

from .knowledge_steps import save_recall_and_forget
from .lab import show_chat, write_notebook

CHAT_CELL = 1


@pytest.fixture
def knowledge_notebook(tmp_path: Path) -> Path:
    source = f"""from gmchat_nb import Chat

chat = Chat(provider="offline", store={str(tmp_path / "chat.sqlite3")!r})
chat
"""
    return write_notebook(tmp_path / "knowledge.ipynb", "Browser test: knowledge.", source)


def test_a_saved_turn_is_recalled_and_trusted_then_deleted_and_gone(
    open_lab: Callable[[str | Path], Page], knowledge_notebook: Path
) -> None:
    page = open_lab(knowledge_notebook)
    root = show_chat(page, CHAT_CELL)
    save_recall_and_forget(root)
