"""Agent tokens in the JupyterLab side panel, driven by Debian's chromium against a real
JupyterLab with the gmchat server extension: the header's **Agents** opens the person's tokens,
**Create token** shows the secret and the MCP client configuration once (this server's real MCP
URL, the secret filled in), **Done** takes them out of the page, the token is listed, and
**Revoke** (asked once more, inline) revokes it. The secret the page showed is then used as an
agent uses it, with the official MCP SDK's Streamable HTTP client on ``{base_url}gmchat/mcp``:
it lists the tools while the token is active and is refused once it is revoked. All of it in
JupyterLab's right sidebar at its narrowest (320 px), where nothing of the drawer may be cut off.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from playwright.sync_api import Locator, Page, Route, expect

from ..jupyter_app import JupyterApp
from .test_side_panel import open_panel, wait_connected

T = TypeVar("T")
SECRET = re.compile(r"^gmat_[A-Za-z0-9_-]{43}$")
NAME = "Claude Code <b>on my laptop</b>"


@pytest.fixture(scope="module")
def tokens_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterApp]:
    """JupyterLab whose chat answers with the offline provider (no turn is asked here); parts
    may be created, each change confirmed by a person, so a token that may propose is offered
    ``mutate``."""
    app = JupyterApp(
        tmp_path_factory.mktemp("agent-tokens-lab"),
        provider="offline",
        chat={"allowed_mutations": ["createPart"], "confirm_mutations": ["createPart"]},
    )
    yield app
    app.stop()


def tid(root: Locator, testid: str) -> Locator:
    return root.locator(f"[data-testid={testid}]")


def as_agent(url: str, secret: str, work: Callable[[ClientSession], Awaitable[T]]) -> T | MCPError:
    """``work`` done by an MCP client configured with ``secret`` (the SDK's Streamable HTTP
    client, initialized), or the MCP error it is refused with (anything else fails the test). In
    a thread of its own: Playwright's sync API holds this one's event loop."""

    async def talk() -> T:
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await asyncio.wait_for(session.initialize(), 30)
            return await asyncio.wait_for(work(session), 60)

    def run() -> T | MCPError:
        try:
            return asyncio.run(talk())
        except (MCPError, BaseExceptionGroup) as error:  # (the SDK's task groups wrap it)
            leaf: BaseException = error
            while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
                leaf = leaf.exceptions[0]
            if isinstance(leaf, MCPError):
                return leaf
            raise

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=120)


async def tool_names(session: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await session.list_tools()).tools)


def mutate(arguments: dict[str, Any]) -> Callable[[ClientSession], Awaitable[dict[str, Any]]]:
    """An agent's ``mutate`` call; its structured answer."""

    async def call(session: ClientSession) -> dict[str, Any]:
        result = await session.call_tool("mutate", arguments)
        assert result.structured_content is not None, result
        return dict(result.structured_content)

    return call


def narrow_the_sidebar(page: Page, panel: Locator, width: float = 320) -> float:
    """Drag the handle between the main area and the right sidebar until the panel is ``width``
    wide, as a person narrows it; the panel's width then."""
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)").last
    box, edges = handle.bounding_box(), panel.bounding_box()
    assert box is not None and edges is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.down()
    page.mouse.move(edges["x"] + edges["width"] - width - box["width"] / 2, y, steps=5)
    page.mouse.up()
    now = panel.bounding_box()
    assert now is not None
    return float(now["width"])


def cut_off(drawer: Locator) -> list[str]:
    """What of the drawer sticks out of it or needs a sideways scroll (empty when nothing)."""
    found = drawer.evaluate(
        """(drawer) => {
          const edge = drawer.getBoundingClientRect().right + 0.5;
          const out = [];
          if (drawer.scrollWidth > drawer.clientWidth + 1) out.push(`the drawer scrolls sideways (${drawer.scrollWidth} > ${drawer.clientWidth})`);
          for (const el of drawer.querySelectorAll("*")) {
            const rect = el.getBoundingClientRect();
            if (rect.width && rect.right > edge) out.push(`${el.tagName}.${el.className} [${el.dataset.testid || ""}] ends at ${rect.right} > ${edge}`);
            if (el.tagName !== "PRE" && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible") out.push(`${el.tagName}.${el.className} scrolls sideways`);
          }
          return out;
        }"""
    )
    assert isinstance(found, list)
    return [str(item) for item in found]


def test_create_a_token_use_it_as_an_agent_revoke_it_and_it_is_refused(
    page: Page, tokens_lab: JupyterApp, dialogs: list[str]
) -> None:
    page.goto(tokens_lab.lab_url("agent-tokens"))
    root = open_panel(page)
    wait_connected(root)
    width = narrow_the_sidebar(page, page.locator("#gmchat-panel"))
    assert 300 <= width <= 340, f"the sidebar did not narrow to its minimum: {width}px"

    toggle = tid(root, "gmchat-agents-toggle")
    expect(toggle).to_have_text("Agents")
    toggle.click()
    drawer = tid(root, "gmchat-agents")
    expect(drawer).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(tid(drawer, "gmchat-agents-list-status")).to_have_text(
        re.compile("^No agent tokens yet")
    )

    # create: a name (with markup, shown as text), may propose, 30 days
    tid(drawer, "gmchat-agents-create").click()
    tid(drawer, "gmchat-agents-create-submit").click()
    expect(tid(drawer, "gmchat-agents-form-error")).to_contain_text("Give the token a name")
    tid(drawer, "gmchat-agents-name").fill(NAME)
    tid(drawer, "gmchat-agents-propose").check()
    tid(drawer, "gmchat-agents-expiry").select_option("30")
    tid(drawer, "gmchat-agents-create-submit").click()

    shown = tid(drawer, "gmchat-agents-secret")
    expect(shown).to_be_visible(timeout=30_000)
    secret = tid(shown, "gmchat-agents-secret-value").text_content() or ""
    assert SECRET.match(secret), secret
    expect(tid(shown, "gmchat-agents-secret-warning")).to_have_text(
        "Copy the secret now: it will not be shown again."
    )
    mcp_url = f"{tokens_lab.url}/gmchat/mcp"
    config: dict[str, Any] = json.loads(tid(shown, "gmchat-agents-config").text_content() or "")
    assert config == {
        "mcpServers": {
            "gmchat": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer {secret}"},
            }
        }
    }

    row = tid(drawer, "gmchat-agents-token")
    expect(row).to_have_count(1, timeout=30_000)
    expect(tid(row, "gmchat-agents-token-name")).to_have_text(NAME)
    assert row.locator("b").count() == 0  # the name is text, never markup
    expect(tid(row, "gmchat-agents-token-state")).to_have_text("Active")
    expect(tid(row, "gmchat-agents-token-prefix")).to_have_text(secret[:12] + "\u2026")
    expect(tid(row, "gmchat-agents-token-scopes")).to_have_text("Read, propose changes")
    expect(tid(row, "gmchat-agents-token-times")).to_contain_text("never used")
    assert secret not in (row.text_content() or "")
    assert not cut_off(drawer), cut_off(drawer)
    # (and the check finds what would be cut off: a long word that cannot wrap)
    drawer.evaluate(
        "(d) => d.append(Object.assign(document.createElement('code'), "
        "{id: 'probe', textContent: 'gmat_' + 'x'.repeat(60)}))"
    )
    assert cut_off(drawer)
    drawer.evaluate("(d) => d.querySelector('#probe').remove()")

    # the secret works as an agent uses it: the MCP SDK's client lists the tools
    tools = as_agent(mcp_url, secret, tool_names)
    assert isinstance(tools, list), tools
    assert {"query", "mutate"} <= set(tools), tools

    # Copy puts the secret on the clipboard; Copy configuration the configuration
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    tid(shown, "gmchat-agents-copy-secret").click()
    expect(tid(shown, "gmchat-agents-secret-copied")).to_have_text("copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == secret
    tid(shown, "gmchat-agents-copy-config").click()
    expect(tid(shown, "gmchat-agents-config-copied")).to_have_text("copied")
    assert json.loads(page.evaluate("() => navigator.clipboard.readText()")) == config

    tid(shown, "gmchat-agents-done").click()
    expect(tid(drawer, "gmchat-agents-secret")).to_have_count(0)
    assert secret not in page.content(), "after Done the secret is nowhere in the page"

    # listed again: the agent's use shows
    toggle.click()
    expect(drawer).to_be_hidden()
    toggle.click()
    expect(tid(row, "gmchat-agents-token-times")).to_contain_text("last used", timeout=30_000)

    # revoke, asked once more inline; Keep first
    tid(row, "gmchat-agents-revoke").click()
    question = tid(row, "gmchat-agents-revoke-question")
    expect(question).to_contain_text("Agents using it are refused from now on")
    tid(question, "gmchat-agents-revoke-keep").click()
    expect(question).to_have_count(0)
    expect(tid(row, "gmchat-agents-token-state")).to_have_text("Active")
    tid(row, "gmchat-agents-revoke").click()
    tid(row, "gmchat-agents-revoke-confirm").click()
    expect(tid(row, "gmchat-agents-token-state")).to_have_text("Revoked", timeout=30_000)
    expect(row).to_have_attribute("data-state", "revoked")
    expect(tid(row, "gmchat-agents-revoke")).to_have_count(0)
    expect(tid(drawer, "gmchat-agents-list-status")).to_have_text("1 token, 0 active")
    assert not cut_off(drawer), cut_off(drawer)

    # revoked, the same secret is refused
    refused = as_agent(mcp_url, secret, tool_names)
    assert isinstance(refused, MCPError), f"a revoked token still lists the tools: {refused}"
    assert refused.code == -32600 and "revoked" in refused.message, refused


def test_a_request_with_a_token_is_refused_and_the_drawer_says_why(
    page: Page, tokens_lab: JupyterApp, dialogs: list[str]
) -> None:
    """The routes are a person's browser session's only: the same request with the Jupyter
    token added (as a script or an agent would send it) is refused, and the panel shows the
    server's sentence as text."""
    page.goto(tokens_lab.lab_url("agent-tokens-refused"))

    def with_token(route: Route) -> None:
        headers = {**route.request.headers, "authorization": f"token {tokens_lab.token}"}
        route.continue_(headers=headers)

    page.route(re.compile(r"/gmchat/chat/agent-tokens/"), with_token)
    root = open_panel(page)
    wait_connected(root)
    tid(root, "gmchat-agents-toggle").click()
    status = tid(root, "gmchat-agents-list-status")
    expect(status).to_have_attribute("data-code", "forbidden", timeout=30_000)
    expect(status).to_contain_text("browser session")
    expect(tid(root, "gmchat-agents-token")).to_have_count(0)


def create_token(root: Locator, name: str) -> str:
    """Create a token that may propose changes in the panel's Agents; its secret, read from the
    page once, then Done."""
    toggle = tid(root, "gmchat-agents-toggle")
    if toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    tid(root, "gmchat-agents-create").click()
    tid(root, "gmchat-agents-name").fill(name)
    tid(root, "gmchat-agents-propose").check()
    tid(root, "gmchat-agents-create-submit").click()
    value = tid(root, "gmchat-agents-secret-value")
    expect(value).to_have_text(SECRET, timeout=30_000)
    secret = value.text_content() or ""
    tid(root, "gmchat-agents-done").click()
    toggle.click()
    return secret


def test_an_agents_change_waits_for_the_person_who_confirms_it_in_the_panel(
    page: Page, tokens_lab: JupyterApp, dialogs: list[str]
) -> None:
    """The panel's Confirm is the person's decision: sent as the browser session (no Jupyter
    token, which the server refuses for an agent's change), it runs the change the agent
    proposed with its token, once, and the agent learns that it ran."""
    page.goto(tokens_lab.lab_url("agent-proposes"))
    root = open_panel(page)
    wait_connected(root)
    secret = create_token(root, "proposer")
    mcp_url = f"{tokens_lab.url}/gmchat/mcp"

    pending = as_agent(
        mcp_url, secret, mutate({"mutation": "createPart", "input": {"name": "AgentPart"}})
    )
    assert isinstance(pending, dict) and pending["status"] == "pending_confirmation", pending

    # the person opens the conversation the change waits in, and confirms it
    picker = tid(root, "gmchat-conversations")
    picker.focus()  # (the picker lists the conversations again)
    picker.select_option(pending["conversation_id"], timeout=30_000)
    box = tid(root, "gmchat-confirm-box")
    expect(box).to_be_visible(timeout=30_000)
    expect(box).to_contain_text("createPart")
    expect(box).to_contain_text("AgentPart")
    tid(box, "gmchat-confirm").click()
    expect(box).to_contain_text("applied", timeout=30_000)
    expect(tid(root, "gmchat-error")).to_have_count(0)

    learned = as_agent(mcp_url, secret, mutate({"confirmation_id": pending["confirmation_id"]}))
    assert isinstance(learned, dict) and learned["status"] == "executed", learned
    journal = tokens_lab.journal(pending["conversation_id"])
    ran = [e for e in journal if e["type"] == "tool_result" and e["name"] == "mutate"]
    assert [e["result"]["status"] for e in ran] == ["executed"], journal
