"""The page actions of the widget's browser tests (and ``scripts/screenshots.py``,
``bench/frontend.py``): open a notebook, run a cell, show the chat, ask it.

The JupyterLab they drive is ``tests/jupyter_app.py``'s and the browser ``tests/chromium.py``'s;
the notebooks they open are in ``notebooks/`` (``NOTEBOOKS``).
"""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from ...jupyter_app import write_notebook

__all__ = [
    "NOTEBOOKS",
    "ask",
    "cell",
    "cell_output",
    "chat_widget",
    "open_notebook",
    "run_cell",
    "save_notebook",
    "show_chat",
    "wait_for_kernel_idle",
    "write_notebook",
]

NOTEBOOKS = Path(__file__).parent / "notebooks"
KERNEL_IDLE = "Python 3 (ipykernel) | Idle"


# -- page actions ----------------------------------------------------------------------------------


def notebook(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel:visible")


def wait_for_kernel_idle(page: Page, timeout: float = 60_000) -> None:
    """The status bar says the kernel is connected and idle (the toolbar indicator says 'idle'
    before the kernel is even connected)."""
    expect(page.locator("#jp-main-statusbar").get_by_text(KERNEL_IDLE)).to_be_visible(
        timeout=timeout
    )


def open_notebook(page: Page, url: str) -> None:
    page.goto(url)
    expect(notebook(page).locator(".jp-Cell").first).to_be_visible(timeout=60_000)
    wait_for_kernel_idle(page)


def cell(page: Page, index: int) -> Locator:
    return notebook(page).locator(".jp-Cell").nth(index)


def cell_output(page: Page, index: int) -> Locator:
    return cell(page, index).locator(".jp-OutputArea-output")


def run_cell(page: Page, index: int) -> None:
    """Select a cell by its prompt and press the toolbar's run button (more reliable than
    Shift+Enter in an editor)."""
    cell(page, index).locator(".jp-InputPrompt").click()
    expect(cell(page, index)).to_have_class(re.compile(r"\bjp-mod-selected\b"))
    notebook(page).locator("[data-command='notebook:run-cell-and-select-next']").click()


def save_notebook(page: Page) -> None:
    notebook(page).locator("[data-command='docmanager:save']").click()
    expect(page.locator(".jp-mod-dirty")).to_have_count(0, timeout=10_000)


# -- the chat widget -------------------------------------------------------------------------------


def chat_widget(page: Page) -> Locator:
    """The chat panel (the notebook shows one)."""
    return notebook(page).locator("[data-testid=gmchat-root]")


def ask(page: Page, question: str) -> None:
    """Type a question into the widget and press Send."""
    root = chat_widget(page)
    root.locator("[data-testid=gmchat-input]").fill(question)
    root.locator("[data-testid=gmchat-send]").click()


def show_chat(page: Page, index: int) -> Locator:
    """Run the cell that displays the chat and wait for the panel."""
    run_cell(page, index)
    root = chat_widget(page)
    expect(root).to_be_visible(timeout=30_000)
    expect(root.locator("[data-testid=gmchat-input]")).to_be_editable()
    return root
