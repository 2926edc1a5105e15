"""A turn's evidence rows (``core/session/evidence.py``), built from journaled events as the
server's evidence route builds them: the project compiles a stored call again to the document
and variables ``query`` sent; planned ids, a crash's cut-off step, direct tools, managers the
project hides and the re-run cell (every page a query read, and its window of rows)."""

from __future__ import annotations

import json
from typing import Any

from gmchat_nb import demo_project
from gmchat_nb.core.frames import flatten_row, frame_summary
from gmchat_nb.core.project import Project
from gmchat_nb.core.session.evidence import evidence_code, evidence_row, stored_evidence
from gmchat_nb.core.settings import ChatSettings

PARTS = {"manager": "Part", "fields": ["name", {"material": ["name"]}], "order_by": ["name"],
         "filters": {"material__name": "Steel"}, "limit": 3}  # fmt: skip
SUPPLIERS = {"manager": "Supplier", "fields": ["name"], "limit": 2}
SETTINGS = ChatSettings()


async def played(project: Project, call_id: str, name: str, args: dict[str, Any], sequence: int,
                 **extra: Any) -> list[dict[str, Any]]:  # fmt: skip
    """A query's tool_call and tool_result as the journal keeps them (JSON, per-turn numbers)."""
    query = {**args, "manager": name.removeprefix("query_").title()} if name != "query" else args
    outcome = await project.query(**query)
    call = {"type": "tool_call", "id": call_id, "name": name, "args": args, "sequence": sequence}
    result = {
        "type": "tool_result",
        "id": call_id,
        "name": name,
        "result": outcome.to_result(),
        "frame": frame_summary(outcome.rows),
        "sequence": sequence + 1,
    }
    return json.loads(json.dumps([{**call, **extra}, {**result, **extra}], default=str))


async def test_a_stored_call_compiles_to_what_the_query_sent() -> None:
    project = demo_project()
    try:
        outcome = await project.query(**PARTS)
        plan, variables = await project.query_request(dict(PARTS))
        assert (plan.text, variables) == (outcome.document, outcome.variables)
        events = await played(project, "c1", "query", PARTS, 1)
        [row] = await stored_evidence(project, SETTINGS, events)
        assert row["document"] == outcome.document and row["variables"] == outcome.variables[0]
        assert (row["call_id"], row["rows"]) == ("c1", len(outcome.rows))
        assert (row["total_count"], row["complete"]) == (outcome.total_count, outcome.complete)
        assert row["filters"] == {"material": {"name": "Steel"}}
        assert row["code"] == evidence_code(outcome.document, outcome.variables[0], SETTINGS)
    finally:
        await project.aclose()


async def test_planned_ids_direct_tools_and_reads_that_did_not_run() -> None:
    project = demo_project()
    try:
        planned = await played(project, "task_1_call_1", "query", PARTS, 1, task_id="task_1")
        planned[1]["evidence_id"] = "task_1:query:1"
        cached = [dict(event) for event in planned]  # served from the turn's evidence: no frame
        cached[0]["id"] = cached[1]["id"] = "task_1_call_2"
        del cached[1]["frame"]
        direct = await played(project, "d1", "query_material", {"fields": ["name"]}, 5)
        failed = [
            {"type": "tool_call", "id": "f1", "name": "query", "args": {"manager": "Nope"}},
            {"type": "tool_result", "id": "f1", "name": "query",
             "result": {"status": "error", "code": "unknown_manager", "message": "m"}},
        ]  # fmt: skip
        rows = await stored_evidence(project, SETTINGS, planned + cached + direct + failed)
        assert [(row["call_id"], row["manager"]) for row in rows] == [
            ("task_1_call_1", "Part"),
            ("d1", "Material"),
        ]
        assert (rows[0]["task_id"], rows[0]["evidence_id"]) == ("task_1", "task_1:query:1")
        assert "task_id" not in rows[1]
    finally:
        await project.aclose()


async def test_a_step_a_crash_cut_off_is_not_evidence() -> None:
    """The first event a new driver wrote after a crash says which events it replaces."""
    project = demo_project()
    try:
        lost = await played(project, "lost", "query", PARTS, 3)
        kept = await played(project, "kept", "query", PARTS, 3)
        kept[0]["continues_after"] = 2
        first = await played(project, "first", "query", SUPPLIERS, 1)
        rows = await stored_evidence(project, SETTINGS, first + lost + kept)
        assert [row["call_id"] for row in rows] == ["first", "kept"]
    finally:
        await project.aclose()


async def test_a_manager_the_project_hides_is_left_out() -> None:
    every = demo_project()
    hiding = demo_project(exposed=["Material", "Part", "Project"])
    try:
        events = await played(every, "s1", "query", SUPPLIERS, 1)
        events += await played(every, "p1", "query", PARTS, 3)
        events += await played(every, "d1", "query_supplier", {"fields": ["name"]}, 5)
        assert [row["call_id"] for row in await stored_evidence(every, SETTINGS, events)] == [
            "s1",
            "p1",
            "d1",
        ]
        rows = await stored_evidence(hiding, SETTINGS, events)
        assert [row["call_id"] for row in rows] == ["p1"]
        assert "upplier" not in json.dumps(rows)
    finally:
        await every.aclose()
        await hiding.aclose()


def test_the_cell_connects_to_the_settings_project() -> None:
    document, variables = "query { partList { items { name } } }", {"page": 1}
    assert "gmchat_nb.demo_project()\n" in evidence_code(document, variables, SETTINGS)
    large = evidence_code(document, variables, ChatSettings(project="demo:large"))
    assert "gmchat_nb.demo_project('large')\n" in large
    url = "https://gm.example/graphql"
    remote = ChatSettings(project=url, exposed_managers=("Part",))
    assert f"await gmchat_nb.connect({url!r}, exposed=['Part'])\n" in evidence_code(
        document, variables, remote
    )
    every = evidence_code(document, variables, ChatSettings(project=url))
    assert f"await gmchat_nb.connect({url!r}, exposed=None)\n" in every
    assert "VARIABLES = {'page': 1}\n" in every and every.endswith("\nframe")


def test_the_cell_never_shows_the_project_urls_password() -> None:
    """The cell goes to whoever reads the turn (the evidence route too): a password in the
    project's URL stays on the server, and the cell says what to put back."""
    settings = ChatSettings(project="https://analyst:s3cret@gm.example/graphql")
    code = evidence_code("query { x }", {}, settings)
    assert "s3cret" not in code
    assert "https://analyst:***@gm.example/graphql" in code
    assert code.startswith("import gmchat_nb\n\n# the project URL's password is not shown")
    plain = evidence_code("query { x }", {}, ChatSettings(project="https://gm.example/graphql"))
    assert "'https://gm.example/graphql'" in plain and "password" not in plain


async def test_the_cell_of_a_paged_windowed_query_gives_the_rows_the_chat_read() -> None:
    """A query read in two pages whose rows start inside the first (``offset``) and stop short
    of the last (``limit``): the cell reads every page and cuts the same window."""
    project = demo_project()
    try:
        args = {"manager": "PurchaseOrder", "fields": ["number", "quantity"],
                "order_by": ["number"], "limit": 5, "offset": 3}  # fmt: skip
        outcome = await project.query(**args)
        assert len(outcome.variables) == 2 and outcome.plan.window_start  # two pages, a window
        code = evidence_row("c1", outcome, SETTINGS)["code"]
        namespace: dict[str, Any] = {}
        body = "\n".join(f"    {line}" for line in code.splitlines()[:-1])
        exec(f"async def cell():\n{body}\n    return frame", namespace)
        frame = await namespace["cell"]()
        assert frame.to_dict("records") == [flatten_row(row) for row in outcome.rows]
        assert [row["number"] for row in outcome.rows] == [f"PO-100{n}" for n in range(4, 9)]
    finally:
        await project.aclose()


async def _run_cell(code: str) -> Any:
    namespace: dict[str, Any] = {}
    body = "\n".join(f"    {line}" for line in code.splitlines()[:-1])
    exec(f"async def cell():\n{body}\n    return frame", namespace)
    return await namespace["cell"]()


async def test_the_cell_is_python_for_booleans_nulls_lists_quotes_and_any_script() -> None:
    """JSON's ``true``/``null`` in a cell raised NameError: the variables are Python literals,
    and the cell gives the rows the chat read for each of these filters."""
    project = demo_project()
    try:
        reads = [
            {"manager": "PurchaseOrder", "fields": ["number"], "filters": {"urgent": True}},
            {"manager": "Part", "fields": ["name"],
             "filters": {"name__in": ["Bolt", "O'Brien \"x\" \\", "Müller 部品 \u202e"]}},
        ]  # fmt: skip
        for args in reads:
            outcome = await project.query(**args)
            code = evidence_row("c1", outcome, SETTINGS)["code"]
            assert "true" not in code.split("VARIABLES = ")[1].splitlines()[0]
            frame = await _run_cell(code)
            assert frame.to_dict("records") == [flatten_row(row) for row in outcome.rows]
            assert outcome.rows  # each filter matched something the cell had to find again
        nulls = evidence_code(outcome.document, {**outcome.variables[0], "page": None}, SETTINGS)
        assert "'page': None" in nulls
        assert len(await _run_cell(nulls)) == len(outcome.rows)
    finally:
        await project.aclose()


# -- the request each query journals -------------------------------------------------------------


async def test_a_query_journals_the_request_it_sent_and_its_evidence_needs_no_project() -> None:
    """A query read in two pages, a window of them kept: its ``tool_result`` journals the
    document, the first page's variables, the other pages' and the window, and the evidence
    built from the journal alone (no project: it may be down, its schema may have drifted) is
    the live turn's."""
    from gmchat_nb import Chat
    from gmchat_nb.core.events import JOURNALED_QUERY
    from gmchat_nb.core.providers.scripted import ScriptedProvider

    args = {"manager": "PurchaseOrder", "fields": ["number", "quantity"],
            "order_by": ["number"], "limit": 5, "offset": 3}  # fmt: skip
    rounds = [{"tool_calls": [{"id": "c1", "name": "query", "args": args}]}, {"text": "Five."}]
    chat = Chat(provider=ScriptedProvider({"rounds": rounds}), store=":memory:")
    try:
        turn = await chat.ask("Which orders?")
        [outcome] = turn.outcomes
        session = await chat.session()
        assert chat.conversation_id is not None
        events = session.store.events(chat.conversation_id)
        [result] = [event for event in events if event["type"] == "tool_result"]
        assert result[JOURNALED_QUERY] == {
            "manager": "PurchaseOrder",
            "document": outcome.document,
            "variables": outcome.variables[0],
            "pages": outcome.variables[1:],
            "window": [outcome.plan.window_start, outcome.plan.window_start + 5],
        }
        live = evidence_row("c1", outcome, SETTINGS)
        [stored] = await stored_evidence(None, SETTINGS, events)
        assert stored == live  # the cell too: its literals' keys in order either way
        assert await stored_evidence(session.project, SETTINGS, events) == [stored]
        hiding = demo_project(exposed=["Material", "Part", "Project"])
        try:  # a manager the project hides now is left out, as when it is compiled again
            assert await stored_evidence(hiding, SETTINGS, events) == []
        finally:
            await hiding.aclose()
        frame = await _run_cell(stored["code"])
        assert frame.to_dict("records") == [flatten_row(row) for row in outcome.rows]
    finally:
        await chat.aclose()


async def test_without_a_project_an_older_journal_s_queries_are_left_out() -> None:
    """A result journaled before results carried their request can only be compiled again."""
    project = demo_project()
    try:
        events = await played(project, "c1", "query", PARTS, 1)
        assert await stored_evidence(None, SETTINGS, events) == []
        assert [row["call_id"] for row in await stored_evidence(project, SETTINGS, events)] == [
            "c1"
        ]
    finally:
        await project.aclose()
