"""A browser's own ``EventSource`` follows a durable turn on ``GET {url}conversations/{id}/events``
while it streams (issue 22: the first frame of a 6-second answer used to come after 6.1 s, all at
once). A real `jupyter server` with the gmchat extension; Debian's chromium, logged in with the
server's token, reads the stream the way a side panel or any web client would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

from ...server_ext.jupyter_process import AUTH, TOKEN, JupyterServer

SLOW_ANSWER = {"chunks": [f"w{i} " for i in range(120)], "chunk_delay_seconds": 0.05}
TYPES = ["tool_call", "tool_result", "text_chunk", "done", "error"]

FOLLOW = """([url, types]) => {
  window.arrivals = [];
  const source = new EventSource(url);
  for (const type of types) {
    source.addEventListener(type, (event) => {
      window.arrivals.push([performance.now(), type, Number(event.lastEventId)]);
      if (type === "done" || type === "error") source.close();
    });
  }
  return new Promise((resolve) => {
    source.onopen = () => resolve(true);
    source.onerror = () => resolve(false);
  });
}"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[JupyterServer]:
    running = JupyterServer(tmp_path, [SLOW_ANSWER], keepalive_seconds=1.0)
    yield running
    running.stop()


def test_an_event_source_sees_the_answer_as_it_streams(server: JupyterServer, page: Page) -> None:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    conversation = created.json()["conversation"]["id"]
    page.goto(f"{server.url}api/status?token={TOKEN}")  # logged in: the cookie is the browser's
    # A page of the server's origin without the API's "default-src 'none'" policy, which
    # forbids any connection from the page itself.
    blank = f"{server.url}gmchat-test-page"
    page.route(blank, lambda route: route.fulfill(body="<html></html>", content_type="text/html"))
    page.goto(blank)
    events = f"{server.url}gmchat/chat/conversations/{conversation}/events?after=0"
    assert page.evaluate(FOLLOW, [events, TYPES]) is True
    body = {"conversation_id": conversation, "turn_id": "watched", "text": "Tell me slowly"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    page.wait_for_function(
        "window.arrivals.length && window.arrivals.at(-1)[1] === 'done'", timeout=30_000
    )
    arrivals = page.evaluate("window.arrivals")
    chunks = [at for at, kind, _ in arrivals if kind == "text_chunk"]
    assert len(chunks) == 120
    done_at = arrivals[-1][0]
    assert (done_at - chunks[0]) / 1000 > 4.0, "the answer arrived all at once"
    assert (chunks[60] - chunks[0]) / 1000 > 2.0
    assert [position for _, _, position in arrivals] == list(range(1, len(arrivals) + 1))
