"""The agent set-ups of docs/mcp.md and the README work as written: every JSON block there is an
MCP client configuration (Claude Code / Claude Desktop's ``mcpServers``, jupyter-ai's
``mcp_servers``), and each server entry in it is connected to with the official SDK's client the
way its host would: a ``command`` entry is started (``gmchat`` from the checkout's venv) and
spoken to over stdio; a ``url`` entry is reached over Streamable HTTP on a real ``jupyter server``
with an agent token in its headers (the address and the placeholder token replaced by the test
server's and an agent token made for it, as `gmchat agent-token create` makes one; the JupyterHub user's URL by a server under that user's ``base_url``, as the hub's
proxy would forward it). Each lists the tools and answers a query."""

from __future__ import annotations

import getpass
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from gmchat_nb.core.agent.tokens import AgentTokens
from gmchat_nb.core.store import ChatStore

from ..server_ext.jupyter_process import JupyterServer

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "mcp.md"]
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```", re.DOTALL | re.MULTILINE)
PLACEHOLDER = "gmat_YOUR_AGENT_TOKEN"  # an agent token, as every HTTP example shows
QUERY = {"manager": "Part", "fields": ["name"], "limit": 2}
SECRETS: dict[str, str] = {}  # base URL -> the agent token made for its server


def entries() -> list[tuple[str, dict[str, Any]]]:
    """Every server entry of every MCP configuration in the pages, named by where it is."""
    found = []
    for page in PAGES:
        for number, block in enumerate(JSON_BLOCK.findall(page.read_text()), 1):
            config = json.loads(block)
            servers = config.get("mcpServers") or {}
            for name, entry in servers.items():
                found.append((f"{page.name}#{number}:{name}", {"style": "claude", **entry}))
            for entry in config.get("mcp_servers") or []:
                found.append(
                    (f"{page.name}#{number}:{entry['name']}", {"style": "jupyter-ai", **entry})
                )
    return found


ENTRIES = entries()


def test_the_pages_hold_every_kind_of_set_up() -> None:
    styles = {(entry["style"], "url" in entry) for _, entry in ENTRIES}
    assert styles == {
        ("claude", False),
        ("claude", True),
        ("jupyter-ai", False),
        ("jupyter-ai", True),
    }
    assert any("/user/" in entry.get("url", "") for _, entry in ENTRIES)  # the hub user's


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, JupyterServer]]:
    """A Jupyter server per base URL the configurations name, each with an agent token."""
    started: dict[str, JupyterServer] = {}
    try:
        for _, entry in ENTRIES:
            if "url" in entry:
                base = _base_url(entry["url"])
                if base not in started:
                    started[base] = JupyterServer(
                        tmp_path_factory.mktemp("jupyter"), [], base_url=base
                    )
                    with ChatStore(str(started[base].store_path)) as store:
                        made = AgentTokens(store).create(getpass.getuser(), "docs", ["read"])
                    SECRETS[base] = made.secret
        yield started
    finally:
        for server in started.values():
            server.stop()


def _base_url(url: str) -> str:
    return urlsplit(url).path.removesuffix("gmchat/mcp")


def _headers(entry: dict[str, Any], secret: str) -> dict[str, str]:
    given = entry.get("headers") or {}
    pairs = given.items() if isinstance(given, dict) else [(h["name"], h["value"]) for h in given]
    return {name: value.replace(PLACEHOLDER, secret) for name, value in pairs}


async def _tools_and_query(session: ClientSession) -> None:
    await session.initialize()
    names = [tool.name for tool in (await session.list_tools()).tools]
    assert names[:4] == ["search_managers", "get_manager_schema", "find_path", "query"]
    result = await session.call_tool("query", QUERY)
    assert not result.is_error, result
    assert result.structured_content is not None
    assert len(result.structured_content["rows"]) == 2


@pytest.mark.parametrize(
    ("where", "entry"),
    [e for e in ENTRIES if "command" in e[1]],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_a_command_entry_starts_the_stdio_server(
    where: str, entry: dict[str, Any], tmp_path: Path
) -> None:
    assert entry["command"] == "gmchat", where
    args = list(entry["args"])
    if "--config" in args:  # the settings file the page shows beside it
        at = args.index("--config") + 1
        config = tmp_path / args[at]
        config.write_text(_yaml_block("docs/mcp.md"))
        args[at] = str(config)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),  # the default store goes there
    }
    server = StdioServerParameters(command=entry["command"], args=args, env=env, cwd=tmp_path)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await _tools_and_query(session)
        if "--config" in args:  # the settings it names are in force: their change is offered
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert "mutate" in names


@pytest.mark.parametrize(
    ("where", "entry"),
    [e for e in ENTRIES if "url" in e[1]],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_a_url_entry_reaches_the_server_s_mcp_route(
    where: str, entry: dict[str, Any], servers: dict[str, JupyterServer]
) -> None:
    if entry["style"] == "claude":
        assert entry["type"] == "http", where
    server = servers[_base_url(entry["url"])]
    url = server.url + "gmchat/mcp"
    secret = SECRETS[_base_url(entry["url"])]
    headers = _headers(entry, secret)
    assert headers == {"Authorization": f"Bearer {secret}"}, where  # never the Jupyter token
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await _tools_and_query(session)


def _yaml_block(page: str) -> str:
    blocks = re.findall(r"^```yaml\n(.*?)^```", (ROOT / page).read_text(), re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, "the page shows one settings file"
    return str(blocks[0])
