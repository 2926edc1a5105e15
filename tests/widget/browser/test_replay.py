"""A view that comes back (a reload, a second view, a dropped kernel connection) replays from its
cursor instead of taking a snapshot, and shows every event once.

The widget's root says how it was last brought up to date (``data-sync``: ``snapshot`` or
``replay``) and how often (``data-snapshots``, ``data-replays``), and its cursor's journal
position (``data-position``); the tests read those and the transcript itself.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, WebSocketRoute, expect

from .lab import (
    ask,
    chat_widget,
    run_cell,
    save_notebook,
    show_chat,
    wait_for_kernel_idle,
    write_notebook,
)

CHAT_CELL, SECOND_VIEW_CELL = 1, 2
GREETING = "Hello, ask me about the inventory."
QUESTION = "Which materials are in the inventory?"
FIRST_WORDS = "Let me look at the materials."
LAST_WORDS = "Only Lead is hazardous."
MATERIALS = ["Steel", "Aluminum", "Cobalt", "Titanium", "Copper", "Brass", "Nylon", "Lead"]

# Two turns: a greeting, then a query whose answer comes a second after its first words.
CHAT_SOURCE = f"""\
from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

provider = ScriptedProvider(
    {{
        "rounds": [
            {{"text": {GREETING!r}}},
            {{
                "chunks": ["Let me look ", "at the materials. "],
                "tool_calls": [
                    {{"name": "query", "args": {{"manager": "Material", "fields": ["name"]}}}}
                ],
            }},
            {{
                "delay_seconds": 1.0,
                "chunks": ["The inventory has ", "**8 materials**. ", {LAST_WORDS!r}],
            }},
        ]
    }}
)
chat = Chat(provider=provider, store=":memory:")
chat"""


def replay_notebook(folder: Path) -> Path:
    """Cell 1 shows the chat, cell 2 shows it again (a second view of the same widget)."""
    return write_notebook(
        folder / "replay.ipynb", "Browser test: replay.", CHAT_SOURCE, "chat  # a second view"
    )


def answered(root: Locator, question: str, words: str) -> None:
    ask(root.page, question)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(words, timeout=20_000)
    expect(root).to_have_attribute("data-busy", "false")


def run_both_turns(root: Locator) -> None:
    answered(root, "Hi", GREETING)
    answered(root, QUESTION, LAST_WORDS)
    expect(root).to_have_attribute("data-position", re.compile(r"^\d+$"))


def check_transcript_once(root: Locator) -> None:
    """Both turns, each event rendered once: two questions, each answer's words once, one query
    card with its table, one usage line per turn."""
    expect(root.locator("[data-testid=gmchat-question]")).to_have_text(
        ["Hi", QUESTION], timeout=15_000
    )
    answers = root.locator("[data-testid=gmchat-answer]")
    expect(answers).to_have_count(2)
    expect(answers.last).to_contain_text(LAST_WORDS)
    first, second = answers.all_inner_texts()
    assert first.count(GREETING) == 1, first
    assert second.count(FIRST_WORDS) == 1 and second.count(LAST_WORDS) == 1, second
    cards = root.locator("[data-testid=gmchat-tool]")
    expect(cards).to_have_count(1)
    expect(cards).to_have_attribute("data-status", "ok")
    expect(cards.locator("[data-testid=gmchat-table] tbody tr")).to_have_count(len(MATERIALS))
    expect(root.locator("[data-testid=gmchat-error]")).to_have_count(0)


def test_a_reload_replays_from_the_saved_cursor_and_a_broken_save_snapshots(
    open_lab: Callable[[str | Path], Page], tmp_path: Path
) -> None:
    page = open_lab(replay_notebook(tmp_path))
    root = show_chat(page, CHAT_CELL)
    expect(root).to_have_attribute("data-sync", "snapshot")
    run_both_turns(root)
    position = root.get_attribute("data-position")
    save_notebook(page)  # the saved output names the widget; the kernel still holds its model

    page.reload()

    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_be_visible(timeout=30_000)
    expect(root).to_have_attribute("data-sync", "replay", timeout=15_000)
    expect(root).to_have_attribute("data-replays", "1")
    assert root.get_attribute("data-snapshots") is None  # the kernel sent no snapshot
    expect(root).to_have_attribute("data-position", position or "")
    check_transcript_once(root)

    # A damaged save must not break the widget: that reload takes a snapshot.
    broken = page.evaluate(
        """() => Object.keys(sessionStorage).filter((k) => k.startsWith('gmchat:'))
            .map((k) => (sessionStorage.setItem(k, '{"v": 1, "cursor": {broken'), k))"""
    )
    assert len(broken) == 1, broken
    page.reload()

    wait_for_kernel_idle(page)
    root = chat_widget(page)
    expect(root).to_have_attribute("data-sync", "snapshot", timeout=30_000)
    assert root.get_attribute("data-replays") is None
    check_transcript_once(root)


def test_a_second_view_replays_and_shows_each_event_once(
    open_lab: Callable[[str | Path], Page], tmp_path: Path
) -> None:
    page = open_lab(replay_notebook(tmp_path))
    root = show_chat(page, CHAT_CELL)
    run_both_turns(root)

    run_cell(page, SECOND_VIEW_CELL)

    views = chat_widget(page)
    expect(views).to_have_count(2, timeout=30_000)
    second = views.nth(1)
    expect(second).to_have_attribute("data-sync", "replay", timeout=15_000)
    assert second.get_attribute("data-snapshots") is None
    check_transcript_once(second)
    check_transcript_once(views.nth(0))


class KernelSockets:
    """Playwright between the page and the kernel's WebSocket: it forwards every frame, and
    can drop what the server sends for a while (a connection that silently lost messages) and
    then cut the connection, which JupyterLab re-opens."""

    def __init__(self) -> None:
        self.routes: list[tuple[WebSocketRoute, WebSocketRoute]] = []
        self.dropping = False
        self.dropped: list[str | bytes] = []

    def route(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        ws.on_message(server.send)
        server.on_message(lambda message: self._deliver(ws, message))
        self.routes.append((ws, server))

    def _deliver(self, ws: WebSocketRoute, message: str | bytes) -> None:
        if self.dropping:
            self.dropped.append(message)
        else:
            ws.send(message)

    def dropped_text(self, needle: str) -> bool:
        data = needle.encode()
        return any(data in (m if isinstance(m, bytes) else m.encode()) for m in self.dropped)

    def cut(self) -> None:
        """Close every connection; JupyterLab's new ones forward normally."""
        routes, self.routes = self.routes, []
        self.dropping = False
        for ws, server in routes:
            server.close()
            ws.close()


@pytest.fixture
def kernel_sockets(page: Page) -> KernelSockets:
    """Route the page's kernel WebSockets through a :class:`KernelSockets` (before it opens)."""
    sockets = KernelSockets()
    page.route_web_socket(re.compile(r"/api/kernels/[^/?]+/channels"), sockets.route)
    return sockets


def test_a_view_whose_kernel_connection_dropped_replays_what_it_missed(
    kernel_sockets: KernelSockets, open_lab: Callable[[str | Path], Page], tmp_path: Path
) -> None:
    page = open_lab(replay_notebook(tmp_path))
    root = show_chat(page, CHAT_CELL)
    answered(root, "Hi", GREETING)
    expect(root).to_have_attribute("data-position", re.compile(r"^\d+$"))
    ask(page, QUESTION)
    answer = root.locator("[data-testid=gmchat-answer]").last
    expect(answer).to_contain_text(FIRST_WORDS, timeout=20_000)

    # The rest of the turn is lost on the way to the page ...
    kernel_sockets.dropping = True
    deadline = time.monotonic() + 20
    while not kernel_sockets.dropped_text('"turn_end"') and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    assert kernel_sockets.dropped_text('"turn_end"'), "the turn did not end while cut off"
    expect(answer).not_to_contain_text(LAST_WORDS)
    # ... then the connection drops and JupyterLab reconnects: the view asks for what it missed.
    kernel_sockets.cut()

    expect(root).to_have_attribute("data-replays", "1", timeout=30_000)
    expect(root).to_have_attribute("data-sync", "replay")
    expect(root).to_have_attribute("data-snapshots", "1")  # only the first, when it was shown
    expect(answer).to_contain_text(LAST_WORDS)
    expect(root).to_have_attribute("data-busy", "false")
    check_transcript_once(root)
