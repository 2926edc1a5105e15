"""A conversation exported as a notebook (``gmchat_nb.core.export``), on SQLite and PostgreSQL:
reads with a chart, a follow-up and an empty result become the question, each query's cell (its
journaled document and variables), its row count check, the chart's Altair cell and the answer
with its evidence; the notebook runs top to bottom (here in process; with nbval in
test_nbval.py) and says when the data changed since; changes are records, never code; a
conversation that is not there or has no finished turn is refused by name."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from graphql import OperationType, parse

import gmchat_nb
from gmchat_nb import Chat
from gmchat_nb.core.events import JOURNALED_QUERY
from gmchat_nb.core.export import ExportError, conversation_notebook, notebook_text
from gmchat_nb.core.frames import flatten_row
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.settings import ChatSettings
from gmchat_nb.core.store import ChatStore

from .conversations import READS, SPRING, SPRING_INPUT, play_changes, play_reads
from .rendering import problems, rendered_text

NOW = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


async def exported(chat: Chat, **options: Any) -> nbformat.NotebookNode:
    session = await chat.session()
    assert chat.conversation_id is not None
    return conversation_notebook(
        session.store, chat.conversation_id, settings=chat.settings, now=NOW, **options
    )


def code_cells(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def markdown_cells(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def kinds(notebook: nbformat.NotebookNode) -> list[str]:
    """Each cell's kind, as its id names it (``t2-3-query`` -> ``query``)."""
    return [cell.id.rsplit("-", 1)[-1] for cell in notebook.cells]


def assigned(source: str, name: str) -> Any:
    """The literal a cell assigns to ``name``."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"no {name} = ... in {source!r}")


def rendered_lines(markdown: str) -> str:
    """Each line of ``markdown`` as a reader sees it (a table row keeps its bars)."""
    return "\n".join(
        "| " + " | ".join(rendered_text(c) for c in line.strip("|").split(" | ")) + " |"
        if line.startswith("|")
        else rendered_text(line)
        for line in markdown.splitlines()
    )


def compiled(source: str) -> Any:
    return compile(source, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


@pytest.fixture
async def reads(store_location: str) -> Any:
    chat = await play_reads(store_location)
    yield chat
    await chat.aclose()


async def test_reads_become_questions_queries_checks_a_chart_and_answers(reads: Chat) -> None:
    notebook = await exported(reads)
    nbformat.validate(notebook)
    assert (notebook.nbformat, notebook.nbformat_minor) == (4, 5)
    assert notebook.metadata.kernelspec.name == "python3"
    assert notebook.metadata.gmchat_nb == {
        "version": notebook.metadata.gmchat_nb.version,
        "conversation_id": reads.conversation_id,
        "exported_at": "2027-01-15T08:00:00+00:00",
    }
    assert kinds(notebook) == [
        "title", "parameters", "connection",
        "question", "read", "rows", "chart", "answer",
        "question", "read", "rows", "answer",
        "question", "read", "rows", "answer",
    ]  # fmt: skip
    assert len({cell.id for cell in notebook.cells}) == len(notebook.cells)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
            compiled(cell.source)  # valid Python, top-level await as a kernel runs it
    assert notebook.cells[1].metadata.tags == ["parameters"]
    assert notebook_text(notebook) == notebook_text(nbformat.reads(notebook_text(notebook), 4))

    queries = [cell.source for cell in notebook.cells if cell.id.endswith("-read")]
    checks = [cell.source for cell in notebook.cells if cell.id.endswith("-rows")]
    outcomes = [outcome for turn in reads.turns for outcome in turn.outcomes]
    assert len(queries) == len(outcomes) == 3
    for number, (query, check, outcome) in enumerate(
        zip(queries, checks, outcomes, strict=True), start=1
    ):
        assert assigned(query, "DOCUMENT") == outcome.document
        assert assigned(query, "VARIABLES") == outcome.variables[0]
        assert query.endswith(f"\nframe_{number}_1")
        assert check == f"compare_rows(frame_{number}_1, {len(outcome.rows)})"
    assert [len(outcome.rows) for outcome in outcomes] == [5, 3, 0]  # the last one: empty

    [chart] = reads.turns[0].charts
    [chart_cell] = [cell.source for cell in notebook.cells if cell.id.endswith("-chart")]
    drawn = chart.code().splitlines()  # the chart cell Chart.code() writes, on frame_1_1
    assert chart_cell.splitlines()[:-1] == drawn[-6:-1]
    assert chart_cell.splitlines()[-1] == drawn[-1].replace("(frame,", "(frame_1_1,")

    title, first, first_answer, second, _, third, last_answer = markdown_cells(notebook)
    assert "| project | demo |" in title and "| provider | " in title
    assert "2027-01-15 08:00:00 UTC" in title and "| gmchat_nb | " in title
    assert [rendered_text(text) for text in (first, second, third)] == [
        f"{number}. {question}" for number, (question, *_) in enumerate(READS, start=1)
    ]
    assert "**Copper Terminal** has the most in stock." in first_answer
    assert "| `frame_1_1` | Part | " in first_answer and "| 5 |" in first_answer
    assert "Copper" in first_answer.split("| `frame_1_1` |")[1]  # the filter, in the table
    assert "No part is named Spring." in last_answer and "| `frame_3_1` | Part |" in last_answer
    assert "cost &#92;&#36;0\\.00 \\(scripted\\)" in last_answer
    for text in markdown_cells(notebook):
        assert problems(text) == [], text


async def test_the_notebook_runs_top_to_bottom_and_says_when_the_data_changed(
    reads: Chat,
) -> None:
    """Every cell run in order in one namespace, as a fresh kernel runs them (top-level await):
    each query gives the rows the chat read; once a part named Spring exists, the empty result's
    check says so, without failing."""
    notebook = await exported(reads)
    namespace: dict[str, Any] = {}
    printed = io.StringIO()
    try:
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            with contextlib.redirect_stdout(printed):
                result = eval(compiled(cell.source), namespace)
                if asyncio.iscoroutine(result):
                    await result
            if cell.id == "connection":  # the data changes after the conversation
                project = namespace["project"]
                change = 'mutation { createPart(name: "Spring", quantity: 1) { success } }'
                await project.executor.execute(parse(change), {}, None)
        outcomes = [outcome for turn in reads.turns for outcome in turn.outcomes]
        for number, outcome in enumerate(outcomes[:2], start=1):
            frame = namespace[f"frame_{number}_1"]
            assert frame.to_dict("records") == [flatten_row(row) for row in outcome.rows]
        assert len(namespace["frame_3_1"]) == 1
        assert printed.getvalue().splitlines() == [
            "rows now: 5 (recorded: 5)",
            "rows now: 3 (recorded: 3)",
            "rows now: 1 (recorded: 0)",
            "difference: +1 rows since the conversation",
        ]
    finally:
        if "project" in namespace:
            await namespace["project"].aclose()


async def test_each_query_is_exported_from_the_request_it_journaled(reads: Chat) -> None:
    """The exporter never compiles: it writes the document the query sent, as the journal
    holds it, whatever the project's schema says now."""
    session = await reads.session()
    assert reads.conversation_id is not None
    store = session.store
    results = [
        event
        for event in store.events(reads.conversation_id)
        if event["type"] == "tool_result" and "frame" in event
    ]
    assert [event[JOURNALED_QUERY]["manager"] for event in results] == ["Part"] * 3
    notebook = await exported(reads)
    queries = [cell.source for cell in notebook.cells if cell.id.endswith("-read")]
    assert [assigned(q, "DOCUMENT") for q in queries] == [
        event[JOURNALED_QUERY]["document"] for event in results
    ]


async def test_changes_are_records_of_who_decided_them_and_never_code(
    store_location: str,
) -> None:
    chat = await play_changes(store_location)
    try:
        session = await chat.session()
        assert chat.conversation_id is not None
        records = {r.confirmation_id: r for r in session.store.change_records(chat.conversation_id)}
        assert {key: r.state for key, r in records.items()} == {
            "m1": "rejected",
            "m2": "executed",
        }
        notebook = await exported(chat)
        nbformat.validate(notebook)
        assert kinds(notebook)[3:] == [
            "question", "change", "answer",
            "question", "change", "answer",
            "question", "read", "rows", "answer",
        ]  # fmt: skip
        declined, confirmed = (
            cell.source for cell in notebook.cells if cell.id.endswith("-change")
        )
        for text, confirmation, outcome in (
            (declined, "m1", "declined: nothing was changed"),
            (confirmed, "m2", "executed"),
        ):
            record = records[confirmation]
            assert record.decided_by == chat.actor.id and record.decided_via == "kernel"
            assert "| change | createPart |" in text
            assert f"| confirmation | {confirmation} |" in text
            rows = {
                rendered_text(line.split(" | ")[0].strip("| ")): line.split(" | ", 1)[1]
                for line in text.splitlines()
                if line.startswith("| ") and " | " in line
            }
            shown = {key: rendered_text(value.rstrip(" |")) for key, value in rows.items()}
            assert shown["outcome"] == outcome
            assert shown["decided by"] == f"{chat.actor.id}, in a notebook kernel"
            assert shown["decided at"] == _moment(record.decided_at)
            # the input as the confirmation card shows it: the bidi override written out
            assert "| name | Spring⟨U\\+202E⟩gnp\\.exe |" in text and "| quantity | 4 |" in text
            assert "\u202e" not in text and "display differently" in text
            assert problems(text) == []
        for source in code_cells(notebook):
            compiled(source)
            assert "mutate" not in source and "createPart" not in source
            assert "mutation" not in source.lower()
        [read] = [cell.source for cell in notebook.cells if cell.id.endswith("-read")]
        document = parse(assigned(read, "DOCUMENT"))
        assert {op.operation for op in document.definitions} == {OperationType.QUERY}  # type: ignore[attr-defined]
        assert "Spring" in json.dumps(assigned(read, "VARIABLES")["filter"])
        assert SPRING_INPUT["name"] not in json.dumps(code_cells(notebook))
    finally:
        await chat.aclose()


def _moment(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def test_a_change_record_outlives_cleanup_and_the_confirmation(tmp_path: Path) -> None:
    """``cleanup`` deletes a resolved confirmation once it is older than the ttl (its
    conversation, used since, stays): the export still says who decided it."""
    chat = await play_changes(str(tmp_path / "chat.sqlite3"))
    try:
        session = await chat.session()
        store, conversation_id = session.store, chat.conversation_id
        assert conversation_id is not None
        resolved = store.change_records(conversation_id)[-1].resolved_at
        record = store.conversation(conversation_id)
        assert resolved is not None and record is not None and record.updated_at > resolved
        cutoff = (resolved + record.updated_at) / 2  # after the decisions, before the last turn
        removed = store.cleanup(1, now=cutoff + 3600)
        assert removed["confirmations"] == 2 and removed["conversations"] == 0
        assert store.confirmation(conversation_id, "m2") is None
        notebook = await exported(chat)
        confirmed = [cell.source for cell in notebook.cells if cell.id.endswith("-change")][1]
        assert rendered_text(confirmed.split("| decided by | ")[1].split(" |")[0]) == (
            f"{chat.actor.id}, in a notebook kernel"
        )
    finally:
        await chat.aclose()


def test_a_conversation_not_there_or_without_a_finished_turn_is_refused_by_name(
    store_location: str,
) -> None:
    with ChatStore(store_location) as store:
        with pytest.raises(ExportError) as missing:
            conversation_notebook(store, "nope", settings=ChatSettings())
        assert missing.value.code == "not_found"
        conversation = store.create_conversation("local:alice")
        with pytest.raises(ExportError) as empty:
            conversation_notebook(store, conversation.id, settings=ChatSettings())
        assert empty.value.code == "empty" and "no finished turn" in str(empty.value)


async def test_a_remote_project_s_password_and_headers_are_never_exported(reads: Chat) -> None:
    """The notebook names the project without its URL's password and without the headers the
    chat sent (credentials): its parameters cell says what to put back."""
    session = await reads.session()
    assert reads.conversation_id is not None
    settings = ChatSettings(
        project="https://analyst:s3cret@gm.example/graphql",
        exposed_managers=("Part", "Material"),
        headers={"Authorization": "Bearer t0ken"},
    )
    notebook = conversation_notebook(
        session.store, reads.conversation_id, settings=settings, execute_hint=True
    )
    text = notebook_text(notebook)
    assert "s3cret" not in text and "t0ken" not in text
    parameters, connection = notebook.cells[1].source, notebook.cells[2].source
    assert assigned(parameters, "PROJECT") == "https://analyst:***@gm.example/graphql"
    assert assigned(parameters, "HEADERS") == {} and "put it back for ***" in parameters
    assert (
        "project = await gmchat_nb.connect(PROJECT, exposed=['Part', 'Material'], headers=HEADERS)"
    ) in connection
    assert "demo_project" not in connection
    title = notebook.cells[0].source
    assert "| project | https://analyst:***@gm.example/graphql |" in rendered_lines(title)
    assert "outputs are what the project gave" in title  # execute_hint: run and saved


async def test_a_turn_that_ended_in_an_error_keeps_its_queries_and_says_why(
    store_location: str,
) -> None:
    """A model that stops answering after its query: the query's cell is there, and the answer
    cell says how the turn ended."""
    rounds = [{"tool_calls": [{"id": "q1", "name": "query", "args": SPRING}]}]
    chat = Chat(provider=ScriptedProvider({"rounds": rounds}), store=store_location)
    try:
        turn = await chat.ask("Is there a part named Spring?")
        assert turn.error is not None
        notebook = await exported(chat)
        assert kinds(notebook)[3:] == ["question", "read", "rows", "answer"]
        answer = rendered_text(notebook.cells[-1].source)
        assert f"The turn ended with an error ({turn.error['code']})" in answer
        assert turn.error["message"] in answer
    finally:
        await chat.aclose()


async def test_a_journal_from_before_queries_kept_their_request_still_exports(
    store_location: str,
) -> None:
    """A turn journaled by an older version (a query's result without its request, a turn
    known by its events alone): its answer and its query's evidence row, no cell to re-run."""
    project = gmchat_nb.demo_project()
    try:
        outcome = await project.query(**SPRING)
    finally:
        await project.aclose()
    call = {"type": "tool_call", "id": "c1", "name": "query", "args": SPRING}
    result = {"type": "tool_result", "id": "c1", "name": "query", "result": outcome.to_result(),
              "frame": {"rows": 0, "columns": []}}  # fmt: skip
    events = [call, result, {"type": "text_chunk", "content": "None."},
              {"type": "done", "usage": {"input_tokens": 0, "output_tokens": 0}}]  # fmt: skip
    with ChatStore(store_location) as store:
        conversation = store.create_conversation("local:alice", "old").id
        for sequence, event in enumerate(events, start=1):
            store.append_event(conversation, "old-turn", sequence, {**event, "sequence": sequence})
        notebook = conversation_notebook(store, conversation, settings=ChatSettings(), now=NOW)
    assert kinds(notebook)[3:] == ["question", "note", "answer"]
    assert all(cell.cell_type == "markdown" for cell in notebook.cells[3:])
    answer = rendered_lines(notebook.cells[-1].source)
    assert "None." in answer and "| not re-run | Part | none | 0 |" in answer


async def test_a_change_refused_before_anyone_was_asked_is_a_record_that_it_did_not_run(
    store_location: str,
) -> None:
    create = {"name": "mutate", "id": "m1",
              "args": {"mutation": "createPart", "input": {"name": "Spring"}}}  # fmt: skip
    rounds = [{"tool_calls": [create]}, {"text": "I did not change anything."}]
    chat = Chat(
        provider=ScriptedProvider({"rounds": rounds}),
        store=store_location,
        allowed_mutations=["createPart"],
    )
    try:
        turn = await chat.ask("Which parts are there?")  # the question asks for no change
        [result] = [e for e in turn.events if e["type"] == "tool_result"]
        assert result["result"]["status"] == "error"
        notebook = await exported(chat)
        [change] = [cell.source for cell in notebook.cells if cell.id.endswith("-change")]
        shown = rendered_lines(change)
        assert f"| outcome | not run: {result['result']['code']} |" in shown
        assert "| decided by | nobody was asked: it was refused first |" in shown
        assert all("createPart" not in source for source in code_cells(notebook))
    finally:
        await chat.aclose()
