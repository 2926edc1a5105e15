"""What the side panel shows when the server could not do what was asked (issue 38), in a real
JupyterLab driven by Debian's chromium, with the server extension on a scripted model and the
demo project.

* A turn whose store fills up mid-turn (a small tmpfs under the SQLite store, as in
  tests/server_ext/test_store_outage.py) shows the server's live-only ``notice`` of kind
  ``store`` on its running turn, and ends with exactly one terminal state once space returns.
  Before, the panel dropped frames without a journal position (and its SSE parser gave a frame
  without ``id:`` the previous frame's, so the notice looked like a journal frame already
  seen): a stuck turn looked like a slow one.
* A confirmation the person answers in the panel after the server stopped taking it (decided
  elsewhere while the panel's stream was down) says "not decided" with the server's reason, and
  a decision that could not reach the server gives the buttons back. Before, the card stayed at
  "confirmed — running…" whatever the server answered.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from playwright.sync_api import Page, Route, expect

from ..filesystems import fill, small_disk
from ..jupyter_app import JupyterApp
from ..server_ext.test_store_outage import ROUNDS, STEP_WAIT
from .test_side_panel import ask, conversation_of, new_conversation, open_panel

TURN = "[data-testid=gmchat-turn]"
STORE_NOTICE = "[data-testid=notice][data-kind=store]"
# outage.py's store_notice for a full disk, waiting at its step and then at its end
WAITS = (
    "The chat store is full (its disk has no space left): this request cannot save its progress."
)
STOPPED_WAITING = (
    "The chat store is full (its disk has no space left): this request stopped waiting for it. "
    "It ends with an error as soon as the store can be written again."
)
EVENTS_ROUTE = re.compile(r"/gmchat/chat/conversations/[^/]+/events")
EVENTS_REQUEST = re.compile(rb"GET /gmchat/chat/conversations/[^/ ]+/events[? ]")


@pytest.fixture(scope="module")
def full_disk_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[JupyterApp, Path]]:
    """JupyterLab whose SQLite store is on a small disk of its own (16 MB tmpfs; everything else
    of the server is elsewhere), and whose model searches, then streams slowly (4 s); the disk's
    folder."""
    base = tmp_path_factory.mktemp("full-disk-lab")
    with small_disk(base / "disk") as disk:
        rounds = cast(list[dict[str, Any]], ROUNDS)
        app = JupyterApp(base / "lab", rounds=rounds, store=str(disk / "chat.sqlite3"))
        try:
            yield app, disk
        finally:
            app.stop()


def test_a_turn_whose_store_fills_up_says_so_in_the_panel_and_ends_once(
    page: Page, full_disk_lab: tuple[JupyterApp, Path], dialogs: list[str]
) -> None:
    """The disk under the store fills while the answer streams: the running turn shows that it
    waits for its store, then that it stopped waiting; once space is freed it ends as failed,
    shown once, and the next question is answered."""
    lab, disk = full_disk_lab
    page.goto(lab.lab_url("store-full"))
    root = open_panel(page)
    new_conversation(root)
    ask(root, "List parts")
    turn = root.locator(TURN).first  # (the conversation's only turn, until the next question)
    expect(turn.locator("[data-testid=gmchat-answer]")).to_contain_text("w0", timeout=30_000)

    filler = fill(disk)
    filled_at = time.monotonic()
    try:
        notices = turn.locator(STORE_NOTICE)
        notices.first.wait_for(state="visible", timeout=STEP_WAIT * 1000)
        latency = time.monotonic() - filled_at
        expect(notices.first).to_contain_text(WAITS)
        # on the turn while it runs (it waits for its store)
        expect(turn).to_have_class(re.compile(r"\bgmchat-running\b"))
        expect(root).to_have_attribute("data-busy", "true")
        # it stops waiting at its step, and says so; its end cannot be written yet
        expect(notices).to_have_count(2, timeout=(STEP_WAIT + 10) * 1000)
        expect(notices.nth(1)).to_have_text(STOPPED_WAITING)
        expect(turn.locator("[data-testid=gmchat-error]")).to_have_count(0)
        expect(turn).to_have_class(re.compile(r"\bgmchat-running\b"))
    finally:
        filler.unlink()

    # space is back: the turn ends, once, as failed
    errors = turn.locator("[data-testid=gmchat-error]")
    expect(errors).to_have_count(1, timeout=30_000)
    expect(errors).to_have_attribute("data-code", "chat_error")
    expect(turn).not_to_have_class(re.compile(r"\bgmchat-running\b"))
    expect(turn).to_have_class(re.compile(r"\bgmchat-failed\b"))
    expect(root).to_have_attribute("data-busy", "false")
    conversation = conversation_of(page)
    journal = lab.journal(conversation)
    assert [e["type"] for e in journal if e["type"] in ("done", "error")] == ["error"], journal
    stored = [e for e in journal if e["type"] == "notice" and e.get("kind") == "store"]
    assert stored == [], "the store's notices are live only"
    # and the conversation takes its next question at once
    ask(root, "Are you back?")
    expect(root.locator(TURN)).to_have_count(2, timeout=30_000)
    last = root.locator(TURN).last
    expect(last).not_to_have_class(re.compile(r"\bgmchat-running\b"), timeout=30_000)
    expect(last.locator("[data-testid=gmchat-error]")).to_have_count(0)
    expect(errors).to_have_count(1)
    print(f"store_full notice shown {latency * 1000:.0f} ms after the disk filled")


class Forwarder:
    """A TCP forwarder in front of a Jupyter server (the browser reaches the server through it)
    that can drop the connections carrying a conversation's events stream, as a network blip
    does, while the browser's other connections stay up."""

    def __init__(self, port: int) -> None:
        self._target = ("127.0.0.1", port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._streams: list[socket.socket] = []  # the browser's ends of events streams
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                browser, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self._target)
            with self._lock:
                self._open += [browser, server]
            threading.Thread(target=self._pump, args=(browser, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, browser, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_browser: bool) -> None:
        try:
            while data := source.recv(65536):
                if from_browser and EVENTS_REQUEST.match(data):
                    with self._lock:
                        self._streams.append(source)
                sink.sendall(data)
        except OSError:
            pass  # the other direction (or cut_streams) ended the connection
        finally:
            for end in (source, sink):
                _drop(end)

    def cut_streams(self) -> int:
        """Drop every connection carrying an events stream now; how many there were."""
        with self._lock:
            streams, self._streams = self._streams, []
        for stream in streams:
            _drop(stream)
        return len(streams)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for end in self._open:
                _drop(end)


def _drop(end: socket.socket) -> None:
    with contextlib.suppress(OSError):
        end.shutdown(socket.SHUT_RDWR)  # (wakes the pump blocked reading it)
    end.close()


@pytest.fixture
def forwarded_confirm_lab(confirm_lab: JupyterApp) -> Iterator[tuple[JupyterApp, Forwarder]]:
    """``confirm_lab`` (a change waits for its Confirm), reached through a :class:`Forwarder`."""
    forwarder = Forwarder(confirm_lab.port)
    yield confirm_lab, forwarder
    forwarder.close()


def test_a_decision_the_server_did_not_take_says_not_decided_on_its_card(
    page: Page, forwarded_confirm_lab: tuple[JupyterApp, Forwarder], dialogs: list[str]
) -> None:
    """A change waits on its card. The network drops: the person's Confirm cannot reach the
    server (the card says so and offers the buttons again). Meanwhile the change is confirmed
    elsewhere. The network is back but the panel's stream has not caught up yet (it reconnects
    after a delay): the person's Confirm is refused as made on a stale view, and the card says so
    with the server's reason. Once the panel catches up the card shows the change applied; it
    ran once."""
    lab, forwarder = forwarded_confirm_lab
    page.goto(lab.lab_url("not-decided").replace(lab.url, forwarder.url))
    root = open_panel(page)
    new_conversation(root)
    ask(root, "Add a part called Spring")
    box = root.locator("[data-testid=gmchat-confirm-box]")
    expect(box).to_be_visible(timeout=30_000)
    confirm = box.locator("[data-testid=gmchat-confirm]")
    reject = box.locator("[data-testid=gmchat-reject]")
    outcome = box.locator(".gmchat-confirm-outcome")
    conversation = conversation_of(page)

    def stream_down(route: Route) -> None:  # the panel's events stream cannot reconnect yet
        route.abort("internetdisconnected")

    page.route(EVENTS_ROUTE, stream_down)
    page.context.set_offline(True)
    assert forwarder.cut_streams() >= 1
    try:
        confirm.click()
        expect(outcome).to_have_text(
            re.compile(r"^not decided \u2014 Could not reach the Jupyter server"), timeout=30_000
        )
        expect(confirm).to_be_enabled()  # out of reach: it may be answered again
        expect(reject).to_be_enabled()
    finally:
        page.context.set_offline(False)
    assert executed(lab, conversation) == []

    # confirmed elsewhere (another client of the same person) while the panel is behind
    answer = lab.post(
        "gmchat/chat/confirm/",
        {"confirmation_id": "call-1", "confirmed": True, "conversation_id": conversation},
    )
    results = [e["result"]["status"] for e in answer["events"] if e["type"] == "tool_result"]
    assert results == ["executed"], answer

    confirm.click()
    expect(outcome).to_have_text(
        re.compile(
            r"^not decided \u2014 'expected_sequence' is \d+, but the conversation is at \d+: "
            r"the confirmation was answered on a stale view; read the events and decide again\."
        ),
        timeout=30_000,
    )
    expect(confirm).to_be_disabled()  # refused: not to be answered again
    expect(reject).to_be_disabled()

    page.unroute(EVENTS_ROUTE)  # the stream comes back: the card shows what became of it
    expect(outcome).to_have_text("applied", timeout=30_000)
    expect(root.locator("[data-testid=gmchat-answer]").last).to_contain_text(
        "Handled the request for the part Spring.", timeout=30_000
    )
    assert executed(lab, conversation) == ["executed"]
    journal = lab.journal(conversation)
    assert [e["type"] for e in journal].count("done") == 1, journal


def executed(lab: JupyterApp, conversation: str) -> list[str]:
    """The statuses of the conversation's ``mutate`` results, in journal order."""
    return [
        e["result"]["status"]
        for e in lab.journal(conversation)
        if e["type"] == "tool_result" and e.get("name") == "mutate"
    ]
