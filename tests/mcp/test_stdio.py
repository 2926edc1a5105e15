"""``gmchat mcp``: the real stdio server process, driven by the official SDK's client as an
agent's host drives it — its tools and their hints, every tool called, a seeded fuzz over the
protocol, hidden managers, the resources, a confirm-listed change accepted, declined or left
open through the host's elicitation, a change left pending for the local user's notebook to
decide over the same store, input the SDK client cannot even send, and a bad settings file."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import mcp_types as types
import pytest
import yaml
from hypothesis import given
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from gmchat_nb import Chat
from gmchat_nb.core.text import clean_text

from ..adversarial import EXPOSED, HIDDEN, leaked, tool_calls
from ..conftest import DemoServer
from ..core.test_fuzz import fuzz

ROOT = Path(__file__).resolve().parents[2]
SETTINGS: dict[str, Any] = {
    "exposed_managers": EXPOSED,
    "allowed_mutations": ["createPart", "createProject"],
    "confirm_mutations": ["createProject"],
    "confirm_timeout_seconds": 600,
    "rate_limit": {"requests": None},
}
READS = ["search_managers", "get_manager_schema", "find_path", "query"]
TOOLS = [*READS, "mutate"]
NOWHERE = "Qwxzv"  # a manager no project has


def mcp(*args: str) -> list[str]:
    """The arguments of ``python -m gmchat_nb.cli mcp ...`` after the interpreter."""
    return ["-m", "gmchat_nb.cli", "mcp", *args]


def write_settings(path: Path, settings: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(settings))
    return path


@dataclass
class Agent:
    """One ``gmchat mcp`` process and the SDK client session of an agent's host over it.

    The session lives in a task of its own (the SDK's anyio scopes must open and close in one
    task); tests call it from theirs. ``answers``: what the host's user answers the next
    elicitations (``accept``, ``accept-no``, ``decline``, ``cancel``); ``asked``: what they
    were asked."""

    args: list[str]
    stderr: Path
    elicit: bool = True
    answers: list[str] = field(default_factory=list)
    asked: list[types.ElicitRequestParams] = field(default_factory=list)
    hold: asyncio.Event | None = None  # set: elicitations wait until it is set
    session: ClientSession | None = None
    initialized: types.InitializeResult | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    async def start(self) -> Agent:
        ready = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready))
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not ready.is_set():
            await self._task  # raises why it could not start
            raise RuntimeError(f"gmchat mcp did not start: {self.stderr.read_text()}")
        return self

    async def _hold(self, ready: asyncio.Event) -> None:
        server = StdioServerParameters(command=sys.executable, args=self.args, cwd=str(ROOT))
        with self.stderr.open("w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write):
                callback = self._elicitation if self.elicit else None
                async with ClientSession(read, write, elicitation_callback=callback) as session:
                    self.initialized = await session.initialize()
                    self.session = session
                    ready.set()
                    await self._stop.wait()

    async def _elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params)
        if self.hold is not None:
            await self.hold.wait()
        answer = self.answers.pop(0) if self.answers else "cancel"
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        if answer == "accept-no":
            return types.ElicitResult(action="accept", content={"confirm": False})
        return types.ElicitResult(action="decline" if answer == "decline" else "cancel")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    @property
    def client(self) -> ClientSession:
        assert self.session is not None
        return self.session

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        return await self.client.call_tool(name, arguments, read_timeout_seconds=120)

    async def rows(self, manager: str, name: str) -> list[dict[str, Any]]:
        """Rows of ``manager`` named ``name``, read over the protocol."""
        result = await self.call(
            "query", {"manager": manager, "fields": ["id", "name"], "filters": {"name": name}}
        )
        assert not result.is_error, text(result)
        assert result.structured_content is not None
        return list(result.structured_content["rows"])


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def answered(result: types.CallToolResult) -> dict[str, Any]:
    """The tool's JSON (its structured content), with a text rendering beside it."""
    assert result.structured_content is not None, text(result)
    assert text(result)
    return dict(result.structured_content)


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-stdio")


@pytest.fixture(scope="module")
async def agent(paths: Path) -> AsyncIterator[Agent]:
    """The module's server: the demo, the settings above, a host that can elicit."""
    config = write_settings(paths / "gmchat.yaml", SETTINGS)
    store = str(paths / "chat.sqlite3")
    args = mcp("--project", "demo", "--config", str(config), "--store", store)
    host = await Agent(args=args, stderr=paths / "stderr.txt").start()
    yield host
    await host.stop()


# -- tools -------------------------------------------------------------------------------------


async def test_the_tools_are_listed_with_their_hints(agent: Agent) -> None:
    assert agent.initialized is not None
    assert agent.initialized.server_info.name == "gmchat"
    assert "search_managers" in (agent.initialized.instructions or "")
    listed = {tool.name: tool for tool in (await agent.client.list_tools()).tools}
    assert list(listed) == TOOLS
    for name in READS:
        hints = listed[name].annotations
        assert hints is not None
        assert hints.read_only_hint is True and hints.open_world_hint is False
        assert hints.destructive_hint is not True
        assert listed[name].input_schema["type"] == "object"
        assert listed[name].description
    query_hints = listed["query"].annotations
    assert query_hints is not None and query_hints.idempotent_hint is True
    assert listed["query"].output_schema is not None
    assert "rows" in listed["query"].output_schema["properties"]
    mutate = listed["mutate"]
    assert mutate.annotations is not None
    assert mutate.annotations.read_only_hint is False
    assert mutate.annotations.destructive_hint is True
    assert mutate.annotations.idempotent_hint is False
    assert mutate.annotations.open_world_hint is False
    assert {"mutation", "input", "confirmation_id"} <= set(mutate.input_schema["properties"])
    # the registry's own schemas: a query's fields and filters are described to the agent
    assert {"manager", "fields", "filters"} <= set(listed["query"].input_schema["properties"])
    declared = [tool.model_dump(mode="json") for tool in listed.values()]
    assert leaked(declared, "") == []


async def test_each_tool_answers_over_the_protocol(agent: Agent) -> None:
    search = await agent.call("search_managers", {"query": "parts in stock"})
    assert not search.is_error
    assert answered(search)["result"][0]["manager"] == "Part"

    schema = await agent.call("get_manager_schema", {"manager": "Part"})
    assert not schema.is_error
    assert answered(schema)["manager"] == "Part"
    assert json.loads(text(schema)) == schema.structured_content

    path = await agent.call("find_path", {"from_manager": "Project", "to_manager": "Material"})
    assert not path.is_error, text(path)
    assert "Material" in text(path)

    query = await agent.call("query", {"manager": "Part", "fields": ["name"], "limit": 2})
    assert not query.is_error
    assert answered(query) == {
        "rows": [{"name": "Bolt"}, {"name": "Bearing"}],
        "total": 28,
        "has_more": True,
        "complete": False,
    }
    assert text(query).splitlines()[0] == "2 rows of 28; more with a larger offset."

    name = f"Stdio part {uuid.uuid4().hex[:8]}"
    made = await agent.call("mutate", {"mutation": "createPart", "input": {"name": name}})
    assert not made.is_error, text(made)
    assert answered(made)["status"] == "executed"
    assert agent.asked == []  # createPart needs no confirmation
    assert len(await agent.rows("Part", name)) == 1


async def test_bad_calls_are_tool_errors_the_agent_can_read(agent: Agent) -> None:
    bad: list[tuple[str, dict[str, Any] | None, str]] = [
        ("query", {"manager": "Part"}, "invalid_arguments"),
        ("query", {"manager": "Part", "fields": "name"}, "invalid_arguments"),
        ("query", {"manager": "Part", "fields": ["name"], "limit": "ten"}, "invalid_arguments"),
        ("query", {"manager": "Part", "fields": ["name"], "bogus": True}, "invalid_arguments"),
        ("get_manager_schema", None, "invalid_arguments"),
        ("search_managers", {"query": "steel " * 200_000}, ""),
        ("mutate", {"mutation": "deletePart", "input": {"id": "1"}}, "mutation_not_allowed"),
        ("mutate", {"confirmation_id": "mcp-unknown"}, "unknown_confirmation"),
        ("mutate", {"input": {"name": "x"}}, "invalid_arguments"),
    ]
    for name, args, code in bad:
        result = await agent.call(name, args)
        if code:
            assert result.is_error, (name, args)
            assert answered(result)["code"] == code, text(result)
            assert code in text(result)
        assert len(text(result)) < 300_000
    unknown = await agent.call("delete_everything", {})
    assert unknown.is_error and text(unknown)


def on_the_wire(value: Any, depth: int = 0) -> Any:
    """``value`` as the SDK's client can send it: JSON in UTF-8 (a lone surrogate replaced), no
    deeper than its serialiser goes (cut at 40 levels). What it cannot send is sent raw in
    :func:`test_input_the_sdk_cannot_send_leaves_the_server_answering`."""
    if depth > 40:
        return []
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): on_the_wire(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [on_the_wire(item, depth + 1) for item in value]
    return value


@fuzz(40)
@given(call=tool_calls)
async def test_fuzzed_calls_over_the_protocol_are_each_answered(
    agent: Agent, call: tuple[Any, Any]
) -> None:
    name, args = call
    wire_name = clean_text(name) if isinstance(name, str) else json.dumps(on_the_wire(name))
    wire_args = on_the_wire(args)
    if not isinstance(wire_args, dict):
        wire_args = {"arguments": wire_args}
    result = await agent.call(wire_name, wire_args)
    assert isinstance(result, types.CallToolResult)
    assert text(result), "every call is answered with something the agent can read"
    if wire_name in TOOLS:
        structured = answered(result)
        assert result.is_error == (structured.get("status") == "error"), structured
        assert len(text(result)) < 300_000, "an answer must not grow with the input"
    else:  # the SDK answers a tool it does not know
        assert result.is_error
    assert leaked([text(result), result.structured_content], [name, args]) == []


# -- hidden managers and resources -------------------------------------------------------------

PROBES: list[tuple[str, dict[str, Any]]] = [
    ("get_manager_schema", {"manager": "{}"}),
    ("query", {"manager": "{}", "fields": ["name"]}),
    ("find_path", {"from_manager": "Part", "to_manager": "{}"}),
    ("find_path", {"from_manager": "{}", "to_manager": "Material"}),
]


def probe(args: dict[str, Any], name: str) -> dict[str, Any]:
    """``args`` with ``name`` for its ``{}``."""
    probed: dict[str, Any] = json.loads(json.dumps(args).replace("{}", name))
    return probed


async def test_hidden_managers_answer_like_ones_that_do_not_exist(agent: Agent) -> None:
    for tool, template in PROBES:
        nowhere = await agent.call(tool, probe(template, NOWHERE))
        assert nowhere.is_error
        expected = answered(nowhere)
        for hidden in [*HIDDEN, "supplier", "SupplierType"]:
            args = probe(template, hidden)
            result = await agent.call(tool, args)
            assert result.is_error, (tool, args)
            assert answered(result)["code"] == expected["code"], text(result)
            assert answered(result)["message"] == expected["message"].replace(NOWHERE, hidden)
            assert leaked([text(result), result.structured_content], args) == []
    # a relation to a hidden manager is a field Part does not have
    relation = {"manager": "Part", "fields": ["name", {"{}": ["name"]}]}
    expected = answered(await agent.call("query", probe(relation, NOWHERE.lower())))
    nested = await agent.call("query", probe(relation, "supplier"))
    assert nested.is_error
    assert answered(nested) == json.loads(json.dumps(expected).replace(NOWHERE.lower(), "supplier"))
    assert leaked(text(nested), probe(relation, "supplier")) == []
    search = await agent.call("search_managers", {"query": "supplier purchase order secret"})
    assert leaked([text(search), search.structured_content], "") == []


async def test_resources_list_and_read_the_exposed_managers_only(agent: Agent) -> None:
    listed = (await agent.client.list_resources()).resources
    uris = sorted(str(resource.uri) for resource in listed)
    assert uris == sorted(
        ["gmchat://managers", *[f"gmchat://managers/{name}/schema" for name in EXPOSED]]
    )
    managers = await agent.client.read_resource("gmchat://managers")
    [content] = managers.contents
    assert isinstance(content, types.TextResourceContents)
    assert [manager["name"] for manager in json.loads(content.text)] == EXPOSED
    for name in EXPOSED:
        schema = await agent.client.read_resource(f"gmchat://managers/{name}/schema")
        [content] = schema.contents
        assert isinstance(content, types.TextResourceContents)
        assert json.loads(content.text)["manager"] == name
        assert leaked(content.text, "") == []
    templates = (await agent.client.list_resource_templates()).resource_templates
    assert [template.uri_template for template in templates] == ["gmchat://managers/{name}/schema"]

    with pytest.raises(MCPError) as unknown:
        await agent.client.read_resource(f"gmchat://managers/{NOWHERE}/schema")
    for hidden in HIDDEN:
        with pytest.raises(MCPError) as refused:
            await agent.client.read_resource(f"gmchat://managers/{hidden}/schema")
        assert refused.value.error.code == unknown.value.error.code
        assert refused.value.error.message == unknown.value.error.message.replace(NOWHERE, hidden)
    # the server is still there
    assert (await agent.client.list_resources()).resources


# -- confirm-listed changes and elicitation ----------------------------------------------------


async def change(agent: Agent, name: str) -> types.CallToolResult:
    return await agent.call("mutate", {"mutation": "createProject", "input": {"name": name}})


async def test_a_change_the_user_accepts_runs_once(agent: Agent) -> None:
    name = f"Accepted {uuid.uuid4().hex[:8]}"
    agent.answers, agent.asked = ["accept"], []
    result = await change(agent, name)
    assert not result.is_error, text(result)
    assert answered(result)["status"] == "executed"
    assert answered(result)["data"]["Project"]["name"] == name
    [asked] = agent.asked
    assert "createProject" in asked.message and name in asked.message
    assert "confirm" in asked.requested_schema["properties"]  # type: ignore[union-attr]
    assert len(await agent.rows("Project", name)) == 1


async def test_the_elicitation_shows_a_bidi_override_as_it_is_stored(agent: Agent) -> None:
    """``invoice\u202efdp.exe`` would read "invoice…pdf": the person is shown the character
    and warned, and what runs is exactly what was stored."""
    name = f"invoice\u202efdp {uuid.uuid4().hex[:6]}.exe"
    agent.answers, agent.asked = ["decline"], []
    await change(agent, name)
    [asked] = agent.asked
    assert "invoice\u27e8U+202E\u27e9fdp" in asked.message and "\u202e" not in asked.message
    assert "display differently from what is stored" in asked.message


async def test_a_change_the_user_declines_never_runs(agent: Agent) -> None:
    for answer in ("decline", "accept-no"):
        name = f"Declined {uuid.uuid4().hex[:8]}"
        agent.answers, agent.asked = [answer], []
        result = await change(agent, name)
        assert not result.is_error, text(result)
        assert answered(result)["status"] == "cancelled"
        assert answered(result)["reason"] == "user_rejected"
        assert len(agent.asked) == 1
        assert await agent.rows("Project", name) == []


async def test_a_change_the_user_dismisses_stays_pending_and_can_be_accepted_later(
    agent: Agent,
) -> None:
    name = f"Dismissed {uuid.uuid4().hex[:8]}"
    agent.answers, agent.asked = ["cancel"], []
    pending = answered(await change(agent, name))
    assert pending["status"] == "pending_confirmation"
    assert pending["confirmation_id"].startswith("mcp-")
    assert await agent.rows("Project", name) == []

    agent.answers = ["accept"]
    outcome = await agent.call("mutate", {"confirmation_id": pending["confirmation_id"]})
    assert answered(outcome)["status"] == "executed", text(outcome)
    assert len(agent.asked) == 2  # asked again, and accepted
    assert len(await agent.rows("Project", name)) == 1
    again = await agent.call("mutate", {"confirmation_id": pending["confirmation_id"]})
    assert answered(again) == answered(outcome)
    assert len(agent.asked) == 2
    assert len(await agent.rows("Project", name)) == 1


async def test_the_agent_is_answered_while_its_user_thinks_about_a_change(agent: Agent) -> None:
    name = f"Meanwhile {uuid.uuid4().hex[:8]}"
    agent.answers, agent.asked, agent.hold = ["accept"], [], asyncio.Event()
    try:
        waiting = asyncio.create_task(change(agent, name))
        read = await agent.call("query", {"manager": "Part", "fields": ["name"], "limit": 1})
        assert answered(read)["rows"] == [{"name": "Bolt"}]
        assert not waiting.done()
        assert await agent.rows("Project", name) == []  # nothing runs before the answer
        agent.hold.set()
        assert answered(await waiting)["status"] == "executed"
    finally:
        agent.hold.set()
        agent.hold = None
    assert len(agent.asked) == 1
    assert len(await agent.rows("Project", name)) == 1


# -- a host without elicitation: the local user decides in a notebook ------------------------


@pytest.fixture(scope="module")
def shared_demo() -> Iterator[DemoServer]:
    """A demo both the server and the notebook reach, so a change is seen by both."""
    server = DemoServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("case", "elicit", "decisions"),
    [
        ("a host that cannot ask", False, {}),
        # a host that would answer its own elicitation "accept" is never asked: the setting
        # says a person in a notebook (or the side panel) decides, not the host
        ("a host that could, on a person's server", True, {"mcp_stdio_decisions": "person"}),
    ],
)
async def test_a_pending_change_is_decided_in_the_local_users_notebook(
    paths: Path, shared_demo: DemoServer, case: str, elicit: bool, decisions: dict[str, str]
) -> None:
    slug = "elicit" if elicit else "plain"
    store = str(paths / f"shared-{slug}.sqlite3")
    config = write_settings(paths / f"shared-{slug}.yaml", {**SETTINGS, **decisions})
    host = Agent(
        args=mcp("--project", shared_demo.url, "--config", str(config), "--store", store),
        stderr=paths / f"shared-{slug}-stderr.txt",
        elicit=elicit,
        answers=["accept", "accept"],
    )
    await host.start()
    try:
        name = f"Notebook {uuid.uuid4().hex[:8]}"
        pending = answered(await change(host, name))
        assert pending["status"] == "pending_confirmation", (case, pending)
        assert "person has been asked" in pending["message"]
        assert host.asked == []  # the host is never asked
        still = answered(await host.call("mutate", {"confirmation_id": pending["confirmation_id"]}))
        assert still["status"] == "pending_confirmation"
        assert await host.rows("Project", name) == []

        # the local user's notebook, same settings and store, decides the agent's change
        chat = Chat(project=shared_demo.url, settings=str(config), store=store)
        try:
            # a notebook's confirm is for a turn it runs; the agent's change waits in the store
            assert chat.confirm(pending["confirmation_id"]) is False
            events = await chat.decide(pending["confirmation_id"], True)
            assert chat.conversation_id == pending["conversation_id"]
            # a second decision finds it taken: it runs once
            twice = await chat.decide(pending["confirmation_id"], True)
        finally:
            await chat.aclose()
        [ran] = [event for event in events if event["type"] == "tool_result"]
        assert ran["result"]["status"] == "executed"
        assert [event["type"] for event in twice] == ["error"]
        assert twice[0]["code"] == "bad_event"

        outcome = answered(
            await host.call("mutate", {"confirmation_id": pending["confirmation_id"]})
        )
        assert outcome["status"] == "executed"
        assert outcome == ran["result"]
        assert len(await host.rows("Project", name)) == 1
    finally:
        await host.stop()


# -- what the SDK cannot send, and bad settings ------------------------------------------------


def test_input_the_sdk_cannot_send_leaves_the_server_answering(paths: Path) -> None:
    """Raw lines: a lone surrogate's escape, nesting 5,000 deep, not JSON, arguments that are
    not an object. Each is refused (what cannot be read, with ``id`` null: ``-32700``) or
    dropped; the next request is answered."""
    config = write_settings(paths / "raw.yaml", SETTINGS)
    process = subprocess.Popen(
        [sys.executable, *mcp("--project", "demo", "--config", str(config), "--store", ":memory:")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    watchdog = threading.Timer(120, process.kill)  # a server that stops answering fails, not hangs
    watchdog.start()
    try:
        send(process.stdin, initialize(1))
        assert json.loads(process.stdout.readline())["id"] == 1
        send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        deep = "[" * 5_000 + "]" * 5_000
        shallow = "[" * 100 + "]" * 100
        part = '{"manager": "Part", "fields": ["name"], '
        for line in [
            tool_line(2, "get_manager_schema", '{"manager": "P\\ud800"}'),
            tool_line(3, "query", '{"filters": ' + deep + "}"),
            "this is not JSON",
            tool_line(4, "query", "[1, 2]"),
            tool_line(5, "query", part + '"filters": ' + shallow + "}"),
            tool_line(6, "query", part + '"limit": 1}'),
        ]:
            process.stdin.write(line + "\n")
        process.stdin.flush()
        replies = {}
        while 6 not in replies or None not in replies:  # the -32700 comes too, in any order
            reply = json.loads(process.stdout.readline())
            replies[reply["id"]] = reply
        assert set(replies) <= {None, 2, 3, 4, 5, 6}
        assert replies[None]["error"]["code"] == -32700  # "this is not JSON", answered
        assert "error" in replies[4]  # not an object: a protocol error, answered
        assert replies[5]["result"]["isError"] is True
        assert replies[5]["result"]["structuredContent"]["code"] == "invalid_arguments"
        assert replies[6]["result"]["structuredContent"]["rows"] == [{"name": "Bolt"}]
        assert process.poll() is None
    finally:
        process.stdin.close()
        code = process.wait(timeout=30)
        watchdog.cancel()
    assert code == 0


def initialize(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def tool_line(request_id: int, name: str, arguments: str) -> str:
    """A ``tools/call`` request as one raw line; ``arguments`` is JSON text, sent as written."""
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
        f'"params": {{"name": {json.dumps(name)}, "arguments": {arguments}}}}}'
    )


def send(stream: IO[str], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"allowed_mutatoins": ["createPart"]}, "allowed_mutatoins"),
        ({"rate_limit": {"requests": "many"}}, "rate_limit.requests"),
        ({"allowed_mutations": ["dropDatabase"]}, "allowed_mutations"),
    ],
)
def test_a_bad_settings_file_stops_the_server_with_the_key_named(
    paths: Path, settings: dict[str, Any], key: str
) -> None:
    config = write_settings(paths / f"bad-{key}.yaml", settings)
    done = subprocess.run(
        [sys.executable, *mcp("--project", "demo", "--config", str(config), "--store", ":memory:")],
        input="",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode != 0
    assert key in done.stderr
    assert done.stdout == ""  # stdout is the protocol's
