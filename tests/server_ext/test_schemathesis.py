"""docs/api/openapi.yaml against a real `jupyter server`, by schemathesis (the ``[dev]`` extra).

A bounded, reproducible run of schemathesis's stateless phases (coverage: the document's
boundaries and every method it does not list; fuzzing: ``MAX_EXAMPLES`` cases an operation,
positive and negative, derandomized from ``SEED``) over every operation of the document, with
every check it has: no 5xx, statuses, content types, headers and bodies as documented, a
schema-valid request accepted and a schema-violating one refused, authentication never ignored,
``Allow`` on every 405. Requests carry the server's token, and on the routes only a person's
browser session reaches (``agent-tokens/``), the login cookie with the XSRF token.

The run must find nothing but :data:`KNOWN`: differences the document cannot express, each with
its reason and narrowed to the answers the reason covers. Anything else fails the test with the
request that reproduces it. The run's numbers go to the test's output (``-s``) and to
``schemathesis-run.json`` in the test's temporary directory.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import yaml
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import events, from_schema

from .jupyter_process import TOKEN, JupyterServer

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT_PATH = ROOT / "docs" / "api" / "openapi.yaml"
DOCUMENT: dict[str, Any] = yaml.safe_load(DOCUMENT_PATH.read_text(encoding="utf-8"))
METHODS = ("get", "post", "put", "patch", "delete")
SEED = 38  # with generation.deterministic: the same cases every run, on the same document
MAX_EXAMPLES = 100  # fuzzed cases an operation (the coverage phase adds its boundary cases)
STREAM_SECONDS = 0.5  # the events route never ends: how long one answer is read
SETTINGS = {
    "allowed_mutations": ["createPart"],
    "confirm_mutations": ["createPart"],
    "rate_limit": {"requests": None},
}


@dataclass(frozen=True, slots=True)
class Found:
    """One failure schemathesis reported: where, which check, and the answer it got."""

    operation: str  # "POST /gmchat/mcp"
    code: str  # schemathesis's failure code, "ST202"
    title: str
    message: str
    status: int | None
    body: str
    request: str  # the curl command that reproduces it

    def describe(self) -> str:
        return (
            f"{self.operation}: {self.code} {self.title}\n  {self.message[:400]}\n"
            f"  answered {self.status}: {self.body[:300]}\n  {self.request[:600]}"
        )


@dataclass(frozen=True, slots=True)
class Known:
    """A difference the document cannot express (``when`` narrows it to the answers it covers)."""

    operation: str
    code: str
    reason: str
    when: Callable[[Found], bool] = field(default=lambda found: True)

    def covers(self, found: Found) -> bool:
        return (
            self.operation in (found.operation, ANY)
            and found.code == self.code
            and self.when(found)
        )


ANY = "*"  # a Known of every operation
# what no request can succeed at: a WebSocket without its upgrade, a stateless endpoint's 405s
NEVER_ACCEPTED = {"GET /gmchat/chat/ws", "GET /gmchat/mcp", "DELETE /gmchat/mcp"}
# what succeeds only for a thing the run would have to come across first, named in the path
# (a conversation, a turn, an entry) or in the body (a pending confirmation, a finished turn)
NAMES_A_THING = {"POST /gmchat/chat/confirm/", "POST /gmchat/chat/knowledge/from-turn"}


def answered(status: int, *fragments: str) -> Callable[[Found], bool]:
    """The failure's answer had this status and holds each fragment."""
    return lambda found: found.status == status and all(f in found.body for f in fragments)


KNOWN: tuple[Known, ...] = (
    *(
        Known(
            operation,
            "ST108",
            "The document describes an SSE body as the list of its frames (each with `data` "
            "decoded), as test_openapi.py validates every real stream; schemathesis reads a "
            "3.1 `schema` as one frame's. OpenAPI 3.1 says neither (3.2's `itemSchema`, which "
            "would, is not valid in a 3.1 document).",
        )
        for operation in (
            "POST /gmchat/chat/stream/",
            "GET /gmchat/chat/conversations/{conversation_id}/events",
        )
    ),
    Known(
        "GET /gmchat/chat/ws",
        "ST202",
        "A WebSocket needs an upgrade schemathesis does not perform: a plain GET is the "
        "documented 400 (test_openapi.py and test_websocket.py speak the socket's protocol).",
        answered(400, "Upgrade"),
    ),
    *(
        Known(
            f"{method} /gmchat/mcp",
            "ST202",
            "A stateless MCP endpoint has no stream and no session: the document lists GET and "
            "DELETE to say they answer 405 with `Allow: POST`, as the MCP specification allows; "
            "no request to them is ever accepted.",
            answered(405, "stateless"),
        )
        for method in ("GET", "DELETE")
    ),
    Known(
        "POST /gmchat/mcp",
        "ST202",
        "Under the 2026-07-28 revision every request carries `params._meta` with its protocol "
        "version and client capabilities (the SDK refuses it otherwise, -32602); OpenAPI cannot "
        "tie a body's shape to a header's value.",
        answered(400, "params._meta"),
    ),
    Known(
        ANY,
        "ST202",
        "A lone surrogate is no character: JSON and YAML can spell one (`\\ud800`), JSON "
        "Schema's strings cannot leave it out, and every route refuses it (nothing could store, "
        "log or send it as UTF-8).",
        answered(400, "lone surrogate"),
    ),
    *(
        Known(
            operation,
            "ST202",
            "A verified query's calls are compiled against the project (its managers, fields "
            "and filters): a call the document's shape allows can still name nothing the "
            "project has, which is the documented 400 `not_compiling`.",
            answered(400, '"not_compiling"'),
        )
        for operation in (
            "POST /gmchat/chat/knowledge/",
            "PATCH /gmchat/chat/knowledge/{entry_id}",
            "POST /gmchat/chat/knowledge/import",
        )
    ),
    Known(
        "POST /gmchat/chat/knowledge/import",
        "ST202",
        '`{"yaml": <text>}` carries the document as text: the document says so '
        "(`contentMediaType`, `contentSchema`), but JSON Schema only annotates a string's "
        "content, so text that is no knowledge document is schema-valid and the documented 400.",
        lambda found: found.status == 400 and '"yaml"' in found.request,
    ),
    Known(
        "POST /gmchat/chat/knowledge/from-turn",
        "ST202",
        "What a turn can be saved from depends on the turn, not on the request: one that did "
        "not finish or ran no query that returned data is the documented 400.",
        answered(400, '"invalid"', "turn"),
    ),
    Known(
        "GET /gmchat/chat/conversations/{conversation_id}/events",
        "ST201",
        "`after` is ignored when `Last-Event-ID` is sent, as documented (a reconnecting "
        "EventSource sends both): JSON Schema cannot make a parameter's check depend on "
        "another's presence.",
        lambda found: "Last-Event-ID" in found.request,
    ),
)


# -- the server and the run -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """A real server: the offline provider (answers without a vendor), the demo project."""
    home = tmp_path_factory.mktemp("schemathesis")
    started = JupyterServer(home, [], provider="offline", chat_settings=SETTINGS)
    try:
        yield started
    finally:
        started.stop()


def person_session(server: JupyterServer) -> tuple[str, str, str]:
    """A person's browser session: the login cookie's name and value, and the XSRF token."""
    with httpx.Client(timeout=30) as client:
        client.get(server.url + "login")  # the _xsrf cookie
        client.get(server.url + "api/me", params={"token": TOKEN})  # the login cookie
        (login,) = (name for name in client.cookies if name.startswith("username-"))
        return login, client.cookies[login], client.cookies["_xsrf"]


def run_document(login_cookie: str) -> dict[str, Any]:
    """The document as this run reads it: the login cookie under its concrete name (the
    document names it by its rule, ``username-<host>-<port>``), so that schemathesis sends it
    as the credential it is -- and can take it away to check that it is needed."""
    document = copy.deepcopy(DOCUMENT)
    document["components"]["securitySchemes"]["JupyterCookie"]["name"] = login_cookie
    return document


def run_config(server: JupyterServer) -> tuple[dict[str, Any], SchemathesisConfig]:
    login, session, xsrf = person_session(server)
    config = SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "workers": 1,
            "base-url": server.url.rstrip("/"),
            "checks": {"enabled": True},
            # a listed difference must not end an operation's run: every case is sent
            "continue-on-failure": True,
            "phases": {"examples": {"enabled": False}, "stateful": {"enabled": False}},
            "generation": {
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                # credentials are ours to send, not generated: a random `?token=` or
                # `X-XSRFToken` beside the real ones tests Jupyter, not this document
                "with-security-parameters": False,
            },
            "auth": {
                "openapi": {
                    # the first requirement an operation lists that these satisfy is sent:
                    # the token wherever a token is taken, else the browser session
                    "JupyterToken": {"api_key": f"token {TOKEN}"},
                    # (the _xsrf cookie rides with the login cookie: the XSRF check compares
                    # the header with it)
                    "JupyterCookie": {"api_key": f"{session}; _xsrf={xsrf}"},
                    "XSRFToken": {"api_key": xsrf},
                }
            },
            "operations": [
                {
                    "include-operation-id": "conversationEvents",
                    "request-timeout": STREAM_SECONDS,  # read this long, then judge what came
                    "max-stream-events": 3,
                }
            ],
        }
    )
    return run_document(login), config


@dataclass
class Run:
    """What one run did and found."""

    operations: set[str] = field(default_factory=set)
    statuses: dict[str, Counter[int]] = field(default_factory=dict)  # operation -> answers
    cases: int = 0
    found: list[Found] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self, unknown: list[Found]) -> dict[str, Any]:
        kinds = Counter(f"{found.code} {found.title}" for found in self.found)
        listed = Counter(
            f"{found.code} {found.operation}"
            for found in self.found
            if any(known.covers(found) for known in KNOWN)
        )
        return {
            "schemathesis": schemathesis.__version__,
            "seed": SEED,
            "max_examples": MAX_EXAMPLES,
            "operations": len(self.operations),
            "cases": self.cases,
            "failures": len(self.found),
            "failures_by_kind": dict(sorted(kinds.items())),
            "listed": dict(sorted(listed.items())),
            "unlisted": len(unknown),
            "errors": len(self.errors),
            "seconds": round(self.seconds, 1),
        }


def run(server: JupyterServer) -> Run:
    """Run schemathesis's stateless phases against ``server``."""
    document, config = run_config(server)
    schema = schemathesis.openapi.from_dict(document, config=config)
    result = Run()
    started = time.monotonic()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            record(result, event.recorder)
        elif isinstance(event, events.NonFatalError):
            result.errors.append(f"{event.label}: {event.info.title}: {event.info.message}")
        elif isinstance(event, events.FatalError):
            result.errors.append(f"fatal: {event.exception!r}")
    result.seconds = time.monotonic() - started
    return result


def record(result: Run, recorder: Any) -> None:
    """A scenario's cases and the failures its checks reported."""
    result.cases += len(recorder.cases)
    for case_id, node in recorder.cases.items():
        label = node.value.operation.label
        result.operations.add(label)
        interaction = recorder.interactions.get(case_id)
        response = interaction.response if interaction is not None else None
        if (
            response is not None
            and node.value.method.upper() == node.value.operation.method.upper()
        ):
            result.statuses.setdefault(label, Counter())[response.status_code] += 1
        for check in recorder.checks.get(case_id, []):
            info = check.failure_info
            if info is None:
                continue
            result.found.append(
                Found(
                    operation=node.value.operation.label,
                    code=info.failure.code,
                    title=info.failure.title,
                    message=info.failure.message,
                    status=response.status_code if response is not None else None,
                    body=response.text if response is not None else "",
                    request=info.code_sample,
                )
            )


def documented_operations() -> set[str]:
    return {
        f"{method.upper()} {path}"
        for path, item in DOCUMENT["paths"].items()
        for method in METHODS
        if method in item
    }


def test_the_server_answers_as_its_document_says(server: JupyterServer, tmp_path: Path) -> None:
    result = run(server)
    unknown = [found for found in result.found if not any(k.covers(found) for k in KNOWN)]
    summary = result.summary(unknown)
    statuses = {label: dict(sorted(counts.items())) for label, counts in result.statuses.items()}
    report = {**summary, "statuses": dict(sorted(statuses.items()))}
    (tmp_path / "schemathesis-run.json").write_text(json.dumps(report, indent=2))
    print(f"\nschemathesis: {json.dumps(summary)}")
    assert not result.errors, "\n".join(result.errors)
    assert result.operations == documented_operations()  # every operation, each tested
    assert result.cases > 20 * len(result.operations)  # a real run, not an early stop
    # its credentials worked: every route that names no thing took requests, the token's and
    # the browser session's alike (a run refused at the door would find nothing to report)
    took = {op for op, counts in result.statuses.items() if any(200 <= s < 300 for s in counts)}
    open_routes = documented_operations() - NEVER_ACCEPTED - NAMES_A_THING
    plain = {op for op in open_routes if "{" not in op}
    assert plain <= took, f"no request accepted by {sorted(plain - took)}"
    distinct = {(f.operation, f.code, f.message[:120], f.status): f for f in unknown}
    assert not unknown, f"{len(distinct)} unlisted difference(s):\n" + "\n".join(
        found.describe() for found in distinct.values()
    )
