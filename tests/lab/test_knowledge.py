"""Knowledge in the JupyterLab side panel, driven by Debian's chromium: the same story as the
widget's (tests/widget/browser/knowledge_steps.py) over the server extension's knowledge routes
-- a finished turn saved as a verified query (``POST knowledge/from-turn``), a definition and a
flagged note added, the verified query recalled and the answer marked "Verified query: <name>"
in a new conversation, then deleted (``DELETE knowledge/{id}``) and gone. The offline provider
answers and the demo project is queried; nothing of ours is mocked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from ..jupyter_app import JupyterApp
from ..widget.browser.knowledge_steps import VERIFIED_NAME, save_recall_and_forget
from .test_side_panel import open_panel, wait_connected


@pytest.fixture(scope="module")
def offline_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose chat answers with the offline provider (deterministic)."""
    app = JupyterApp(tmp_path_factory.mktemp("knowledge-lab"), provider="offline")
    yield app
    app.stop()


def test_a_saved_turn_is_recalled_and_trusted_then_deleted_and_gone(
    page: Page, offline_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(offline_lab.lab_url("knowledge"))
    root = open_panel(page)
    wait_connected(root)
    save_recall_and_forget(root)
    # the server agrees: the entry is gone for this person
    listed = offline_lab.get("gmchat/chat/knowledge/")["items"]
    assert VERIFIED_NAME not in [item["name"] for item in listed]
    assert sorted(item["kind"] for item in listed) == ["definition", "note"]
