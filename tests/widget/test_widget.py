"""The widget's kernel side: messages in and out, batching, tables, frames, confirmations, magics.

The front end is replaced by a recording comm (the Jupyter transport is the outside world here);
everything behind it — the widget, the chat, the loop, the demo project — is real.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.widget import ChatWidget
from gmchat_nb.widget.tables import sorted_rows

from .planned import ORCHESTRATION, PlannedReplay
from .planned import QUESTION as PLANNED_QUESTION


class RecordingComm:
    """Stands in for the kernel comm: keeps what the widget sends."""

    kernel = object()
    comm_id = "recording"

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        if isinstance(data, dict) and data.get("method") == "custom":
            self.messages.append(data["content"])

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def on_close(self, callback: Any) -> None:
        pass

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == kind]


MATERIALS = {
    "name": "query",
    "args": {"manager": "Material", "fields": ["name", "density"], "order_by": ["name"]},
}


async def make(
    rounds: list[dict[str, Any]], *, batching: bool = True, **settings: Any
) -> tuple[ChatWidget, RecordingComm, dict[str, Any]]:
    chat = Chat(provider=ScriptedProvider({"rounds": rounds}), store=":memory:", **settings)
    namespace: dict[str, Any] = {}
    widget = ChatWidget(chat, namespace=namespace, batching=batching)
    comm = RecordingComm()
    widget.comm = comm
    return widget, comm, namespace


@pytest.fixture
async def cleanup() -> AsyncIterator[list[ChatWidget]]:
    widgets: list[ChatWidget] = []
    yield widgets
    for widget in widgets:
        await widget.chat.aclose()


async def test_a_turn_streams_batched_events_a_table_and_evidence(
    cleanup: list[ChatWidget],
) -> None:
    chunks = [f"word{i} " for i in range(60)]
    widget, comm, namespace = await make([{"tool_calls": [MATERIALS]}, {"chunks": chunks}])
    cleanup.append(widget)
    record = await widget.run_turn("Which materials are there?")
    kinds = [m["type"] for m in comm.messages]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_end" and "table" in kinds
    streamed = [e for m in comm.of("events") for e in m["events"]]
    assert len(comm.of("events")) < 10  # batched: far fewer messages than the 60 chunks
    assert "".join(e["content"] for e in streamed if e["type"] == "text_chunk") == "".join(chunks)
    [table] = comm.of("table")
    assert table["table"]["columns"] == ["name", "density"] and table["table"]["total_rows"] == 8
    assert table["table"]["rows"][0] == {"name": "Aluminum", "density": 2.7}
    end = comm.of("turn_end")[0]["turn"]
    assert end["answer"] == "".join(chunks) and end["running"] is False
    [evidence] = end["evidence"]
    assert (
        evidence["manager"] == "Material" and evidence["rows"] == 8 and evidence["complete"] is True
    )
    # "Copy as code" re-runs exactly that query and returns the same DataFrame.
    body = evidence["code"].rsplit("\nframe", 1)[0]  # the cell ends by showing `frame`
    source = "async def rerun():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    scope: dict[str, Any] = {}
    exec(source + "    return frame\n", scope)
    rerun = await scope["rerun"]()
    assert list(rerun["name"]) == [row["name"] for row in record["tables"][0]["rows"]]
    assert widget.transcript == [
        {
            "index": 0,
            "question": "Which materials are there?",
            "answer": "".join(chunks),
            "error": None,
            "queries": 1,
        }
    ]
    assert namespace == {}


async def test_without_batching_every_event_is_its_own_message(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"chunks": ["a", "b", "c", "d"]}], batching=False)
    cleanup.append(widget)
    await widget.run_turn("hi")
    assert [len(m["events"]) for m in comm.of("events")] == [1, 1, 1, 1, 1]


async def test_a_chunk_is_shown_when_its_batch_window_closes_not_when_the_model_goes_on(
    cleanup: list[ChatWidget],
) -> None:
    """A model that pauses after a chunk: the chunk goes out when its 40 ms window closes, on its
    own, not held back (merged with the next) until the model streams again half a second later.
    (Its first chunk comes right after the tool result was sent, inside that window.)"""
    widget, comm, _ = await make(
        [
            {"tool_calls": [MATERIALS]},
            {"chunks": ["First part. ", "Second part."], "chunk_delay_seconds": 0.5},
        ]
    )
    cleanup.append(widget)
    await widget.run_turn("hi")
    texts = [
        [e["content"] for e in m["events"] if e["type"] == "text_chunk"] for m in comm.of("events")
    ]
    assert ["First part. "] in texts and ["Second part."] in texts


async def test_a_view_that_appears_later_gets_a_snapshot(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"text": "Hello."}])
    cleanup.append(widget)
    await widget.run_turn("Hi")
    widget.dispatch({"type": "hello"})
    await asyncio.sleep(0.05)
    [snapshot] = comm.of("snapshot")
    assert snapshot["turns"][0]["question"] == "Hi" and snapshot["turns"][0]["answer"] == "Hello."
    assert snapshot["busy"] is False and snapshot["project"] == "demo:inventory"
    assert snapshot["conversations"][0]["title"] == "Hi"


async def test_tables_page_sort_and_become_dataframes(cleanup: list[ChatWidget]) -> None:
    widget, comm, namespace = await make([{"tool_calls": [MATERIALS]}, {"text": "Eight."}])
    cleanup.append(widget)
    record = await widget.run_turn("Materials?")
    key = record["tables"][0]["key"]
    widget.dispatch(
        {
            "type": "table_page",
            "table": key,
            "offset": 2,
            "limit": 3,
            "sort": {"column": "density", "descending": True},
        }
    )
    [page] = comm.of("table_page")
    assert [row["name"] for row in page["rows"]] == ["Cobalt", "Brass", "Steel"] and page[
        "total"
    ] == 8
    widget.dispatch({"type": "to_frame", "table": key, "name": "mats"})
    assert comm.of("frame_bound")[0] == {
        "type": "frame_bound",
        "table": key,
        "name": "mats",
        "shape": [8, 2],
    }
    assert (
        isinstance(namespace["mats"], pd.DataFrame) and namespace["mats"]["density"].max() == 11.34
    )
    widget.dispatch({"type": "to_frame", "table": key, "name": "not a name"})
    widget.dispatch({"type": "to_frame", "table": "nope"})
    assert [m["code"] for m in comm.of("error")] == ["bad_event", "bad_event"]


def test_kernel_side_sorting_orders_as_the_front_end_does() -> None:
    rows = [
        {"name": "Part 10", "qty": 3},
        {"name": None, "qty": None},
        {"name": "part 9", "qty": 1.5},
        {"name": "", "qty": 3},
        {"name": "Part 2", "qty": -1},
    ]
    by_name = [row["name"] for row in sorted_rows(rows, "name")]
    assert by_name == ["Part 2", "part 9", "Part 10", None, ""]
    # Empty values stay last in both directions; equal values keep their order.
    descending = sorted_rows(rows, "qty", descending=True)
    assert [r["name"] for r in descending] == ["Part 10", "", "part 9", "Part 2", None]


FIRST_WIDGET_TURN = """
import asyncio, sys
from gmchat_nb import Chat
from gmchat_nb.widget import ChatWidget

class Comm:
    kernel = object()
    comm_id = "recording"
    def __init__(self): self.messages = []
    def send(self, data=None, metadata=None, buffers=None):
        if isinstance(data, dict) and data.get("method") == "custom":
            self.messages.append(data["content"])
    def close(self, *args, **kwargs): pass
    def on_msg(self, callback): pass
    def on_close(self, callback): pass

async def main():
    namespace = {}
    widget = ChatWidget(Chat(provider="offline", store=":memory:"), namespace=namespace)
    widget.comm = comm = Comm()
    record = await widget.run_turn("Which projects use parts made of cobalt?")
    key = record["tables"][0]["key"]
    widget.dispatch({"type": "table_page", "table": key, "offset": 0, "limit": 5,
                     "sort": {"column": "name", "descending": True}})
    pages = [m for m in comm.messages if m["type"] == "table_page"]
    print("tables:", bool(record["tables"]), "pages:", len(pages), "pandas:", "pandas" in sys.modules)
    widget.dispatch({"type": "to_frame", "table": key, "name": "found"})
    print("bound:", type(namespace["found"]).__name__, "pandas:", "pandas" in sys.modules)
    await widget.chat.aclose()

asyncio.run(main())
"""


def test_a_first_widget_turn_with_tables_does_not_import_pandas() -> None:
    """Tables show, page and sort without pandas; "→ DataFrame" is what imports it."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_WIDGET_TURN], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "tables: True pages: 1 pandas: False",
        "bound: DataFrame pandas: True",
    ]


async def test_unknown_and_malformed_messages_are_refused(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([])
    cleanup.append(widget)
    for message in ({"type": "explode"}, "ask", None, {"no": "type"}):
        widget.dispatch(message)
    assert [m["code"] for m in comm.of("error")] == ["bad_event"] * 4


CREATE = {"name": "mutate", "args": {"mutation": "createPart", "input": {"name": "Spring"}}}


async def springs(widget: ChatWidget) -> int:
    session = await widget.chat.session()
    result = await session.project.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "filters": {"name": "Spring"}}
    )
    return int(result["total_count"])


@pytest.mark.parametrize(("ok", "created"), [(True, 1), (False, 0)])
async def test_confirm_buttons_resolve_once_even_from_another_thread(
    cleanup: list[ChatWidget], ok: bool, created: int
) -> None:
    """JupyterLab may deliver the click on a subshell thread; the widget hops to the kernel loop."""
    widget, comm, _ = await make(
        [{"tool_calls": [CREATE]}, {"text": "Done."}],
        allowed_mutations=["createPart"],
        confirm_mutations=["createPart"],
    )
    cleanup.append(widget)
    widget.ask("Add a part Spring")
    for _ in range(200):
        confirm = [
            e for m in comm.of("events") for e in m["events"] if e["type"] == "confirm_mutation"
        ]
        if confirm:
            break
        await asyncio.sleep(0.01)
    message = {"type": "confirm", "call_id": confirm[0]["id"], "ok": ok}
    thread = threading.Thread(target=widget._receive, args=(widget, message, []))
    thread.start()
    thread.join()
    assert widget._task is not None
    await asyncio.wait_for(widget._task, 5)
    assert await springs(widget) == created
    widget.dispatch(message)  # a second click: nothing is waiting any more
    assert comm.of("error")[-1]["code"] == "confirmation_unavailable"
    assert await springs(widget) == created


async def test_stop_cancels_a_running_turn(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"text": "slow", "delay_seconds": 30}])
    cleanup.append(widget)
    widget.ask("hi")
    await asyncio.sleep(0.05)
    widget.ask("again")  # refused while the first runs
    assert comm.of("error")[-1]["code"] == "turn_in_progress"
    widget.dispatch({"type": "stop"})
    await asyncio.sleep(0.05)
    end = comm.of("turn_end")[-1]["turn"]
    assert end["error"] == {"code": "cancelled", "message": "Stopped."}


async def test_conversation_controls(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"text": "One."}, {"text": "Two."}])
    cleanup.append(widget)
    await widget.run_turn("First")
    first = widget.chat.conversation_id
    widget.dispatch({"type": "new_conversation"})
    await asyncio.sleep(0.05)
    assert widget.turns == [] and comm.of("snapshot")[-1]["turns"] == []
    await widget.run_turn("Second")
    widget.dispatch({"type": "open_conversation", "conversation_id": first})
    await asyncio.sleep(0.05)
    restored = comm.of("snapshot")[-1]["turns"]
    assert [(t["question"], t["answer"]) for t in restored] == [("First", "One.")]
    widget.dispatch({"type": "list_conversations"})
    await asyncio.sleep(0.05)
    assert [c["title"] for c in comm.of("conversations")[-1]["items"]] == ["Second", "First"]


def test_repr_is_deterministic() -> None:
    chat = Chat(provider="offline", store=":memory:")
    assert repr(chat) == "Chat(project='demo', provider='offline', turns=0)"
    widget = ChatWidget(chat, namespace={})
    assert repr(widget) == "ChatWidget(project='demo', turns=0)"
    bundle = widget._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert data["text/plain"] == repr(widget)


def test_the_magics(tmp_path: Path) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    script = tmp_path / "script.yaml"
    script.write_text(
        "- tool_calls: [{name: query, args: {manager: Supplier, fields: [name, country]}}]\n- text: Six suppliers.\n"
    )
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gmchat_nb")
    shell.run_line_magic("gmchat", f"config provider=scripted:{script} store=:memory:")
    shell.run_cell_magic("gmchat", "", "Which suppliers are there?")
    frames = shell.user_ns["_gm"]
    assert (
        len(frames) == 1 and len(frames[0]) == 6 and list(frames[0].columns) == ["name", "country"]
    )
    with pytest.raises(Exception, match="max_results"):
        shell.run_line_magic("gmchat", "config max_result=5")


def test_a_chat_displays_as_its_panel_in_ipython() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from gmchat_nb.widget import panel, register_display

    shell = InteractiveShell.instance()
    assert register_display(shell)
    chat = Chat(provider="offline", store=":memory:")
    data, _ = shell.display_formatter.format(chat)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"] == "ChatWidget(project='demo', turns=0)"
    again, _ = shell.display_formatter.format(chat)
    assert again["application/vnd.jupyter.widget-view+json"]["model_id"] == panel(chat).model_id


def test_importing_gmchat_nb_outside_a_notebook_loads_no_widget_library() -> None:
    code = (
        "import sys, gmchat_nb\n"
        "loaded = [m for m in ('IPython', 'ipywidgets', 'anywidget') if m in sys.modules]\n"
        "print(loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


async def test_a_planned_turn_keeps_its_plan_and_evidence_ids_for_later_views(
    cleanup: list[ChatWidget],
) -> None:
    """A planned turn (recorded: tests/widget/planned.py) streams its task ids, ends with its
    plan in the turn record, and a view that appears later gets the plan in its snapshot."""
    widget = ChatWidget(PlannedReplay(), namespace={})
    comm = RecordingComm()
    widget.comm = comm
    cleanup.append(widget)

    await widget.run_turn(PLANNED_QUESTION)

    streamed = [e for m in comm.of("events") for e in m["events"]]
    assert [e.get("task_id") for e in streamed[:2]] == ["task_1", "task_1"]
    assert streamed[1]["evidence_id"] == "task_1:query:1" and "data" not in streamed[1]["result"]
    [table] = comm.of("table")
    assert table["table"]["call_id"] == "call_1" and table["table"]["total_rows"] == 5
    end = comm.of("turn_end")[0]["turn"]
    assert end["orchestration"] == ORCHESTRATION
    [evidence] = end["evidence"]
    assert evidence["evidence_id"] == "task_1:query:1" and evidence["task_id"] == "task_1"
    assert widget.transcript[0]["plan"] == {
        "status": "partial",
        "coverage": {"resolved": 1, "total": 3},
    }
    widget.dispatch({"type": "hello"})
    await asyncio.sleep(0.05)
    [turn] = comm.of("snapshot")[-1]["turns"]
    assert turn["orchestration"] == ORCHESTRATION and turn["evidence"][0]["task_id"] == "task_1"


async def test_a_turn_without_a_plan_has_no_plan_fields(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"tool_calls": [MATERIALS]}, {"text": "Eight."}])
    cleanup.append(widget)
    await widget.run_turn("Materials?")
    end = comm.of("turn_end")[0]["turn"]
    assert end["orchestration"] is None
    assert not {"task_id", "evidence_id"} & set(end["evidence"][0])
    assert "plan" not in widget.transcript[0]


# -- replay after a reconnect ----------------------------------------------------------------


async def hello(widget: ChatWidget, comm: RecordingComm, **cursor: Any) -> dict[str, Any]:
    """Say hello as a view with ``cursor`` would; the kernel's answer."""
    sent = len(comm.messages)
    widget.dispatch({"type": "hello", **cursor})
    for _ in range(100):
        if len(comm.messages) > sent:
            break
        await asyncio.sleep(0.01)
    [answer] = comm.messages[sent:]
    return answer


def back(cursor: dict[str, Any]) -> dict[str, Any]:
    """A cursor as the front end sends it back in ``hello``."""
    return {
        "conversation_id": cursor["conversation_id"],
        "after": cursor["position"],
        "epoch": cursor["epoch"],
    }


async def test_a_hello_with_a_cursor_gets_exactly_what_came_after_it(
    cleanup: list[ChatWidget],
) -> None:
    widget, comm, _ = await make(
        [{"tool_calls": [MATERIALS]}, {"chunks": ["Eight ", "materials."]}, {"text": "Two."}]
    )
    cleanup.append(widget)
    await widget.run_turn("Which materials?")
    first = comm.of("turn_end")[-1]["cursor"]
    await widget.run_turn("And now?")
    second = comm.of("turn_end")[-1]["cursor"]
    assert first["epoch"] == second["epoch"]
    assert first["conversation_id"] == second["conversation_id"] == widget.chat.conversation_id

    replay = await hello(widget, comm, **back(first))

    assert replay["type"] == "replay" and replay["after"] == first["position"]
    assert replay["cursor"] == second and replay["busy"] is False
    assert replay["pending_confirmation"] is None and replay["project"] == "demo:inventory"
    [turn] = replay["turns"]
    assert turn["question"] == "And now?" and turn["answer"] == "Two."
    # Exactly the journal's events after the cursor, each once, with their positions.
    journal = await widget.chat.events(after=first["position"])
    assert [e["position"] for e in turn["events"]] == [e["sequence"] for e in journal]
    assert [e["type"] for e in turn["events"]] == [e["type"] for e in journal]
    assert first["position"] < turn["events"][0]["position"]
    assert turn["events"][-1]["position"] == second["position"]
    # A view that has everything gets an empty replay: nothing to render twice.
    empty = await hello(widget, comm, **back(second))
    assert empty["type"] == "replay" and empty["turns"] == [] and empty["cursor"] == second
    # The first turn's events carry their positions too (in a snapshot as in a replay).
    snapshot = await hello(widget, comm)
    assert snapshot["type"] == "snapshot" and snapshot["cursor"] == second
    positions = [e["position"] for t in snapshot["turns"] for e in t["events"]]
    assert positions == [e["sequence"] for e in await widget.chat.events()]


async def test_a_running_turn_is_replayed_whole_with_its_pending_confirmation(
    cleanup: list[ChatWidget],
) -> None:
    widget, comm, _ = await make(
        [{"text": "Hi."}, {"tool_calls": [CREATE]}, {"text": "Created."}],
        allowed_mutations=["createPart"],
        confirm_mutations=["createPart"],
    )
    cleanup.append(widget)
    await widget.run_turn("Hello")
    cursor = comm.of("turn_end")[-1]["cursor"]
    widget.ask("Add a part Spring")
    for _ in range(200):
        streamed = [e for m in comm.of("events") for e in m["events"]]
        if streamed[-1]["type"] == "confirm_mutation":
            break
        await asyncio.sleep(0.01)

    replay = await hello(widget, comm, **back(cursor))

    assert replay["type"] == "replay" and replay["busy"] is True
    [running] = replay["turns"]
    assert running["running"] is True and running["question"] == "Add a part Spring"
    assert replay["pending_confirmation"]["id"] == streamed[-1]["id"]
    assert replay["cursor"] == cursor  # a running turn moves no cursor
    widget.dispatch({"type": "confirm", "call_id": streamed[-1]["id"], "ok": True})
    assert widget._task is not None
    await asyncio.wait_for(widget._task, 5)
    after = await hello(widget, comm, **back(cursor))
    [done] = after["turns"]
    assert done["answer"] == "Created." and after["busy"] is False
    assert after["pending_confirmation"] is None


async def test_cursors_that_do_not_fit_get_a_snapshot(cleanup: list[ChatWidget]) -> None:
    widget, comm, _ = await make([{"text": "One."}, {"text": "Two."}])
    cleanup.append(widget)
    await widget.run_turn("First")
    cursor = back(comm.of("turn_end")[-1]["cursor"])
    last = cursor["after"]
    for stale in (
        {**cursor, "after": last + 1},  # ahead of the journal
        {**cursor, "conversation_id": "another-conversation"},
        {**cursor, "epoch": "0123456789abcdef"},  # another epoch (a kernel's reset)
        {"conversation_id": cursor["conversation_id"], "after": last},  # no epoch
    ):
        assert (await hello(widget, comm, **stale))["type"] == "snapshot", stale
    assert (await hello(widget, comm, **cursor))["type"] == "replay"
    # Retention pruned the range the cursor needs: a snapshot (as the server's 410).
    session = await widget.chat.session()
    store = session.store
    original = store.first_position
    store.first_position = lambda conversation_id: last + 5  # type: ignore[method-assign]
    try:
        assert (await hello(widget, comm, **cursor))["type"] == "snapshot"
    finally:
        store.first_position = original  # type: ignore[method-assign]
    # After a clear, the old cursor describes turns that are gone.
    widget.dispatch({"type": "clear"})
    await asyncio.sleep(0.05)
    cleared = comm.of("snapshot")[-1]
    assert cleared["turns"] == [] and cleared["cursor"]["epoch"] != cursor["epoch"]
    assert (await hello(widget, comm, **cursor))["type"] == "snapshot"
    assert (await hello(widget, comm, **back(cleared["cursor"])))["turns"] == []
    # A turn that moves to a new conversation starts a new epoch too.
    widget.dispatch({"type": "new_conversation"})
    await asyncio.sleep(0.05)
    fresh = comm.of("snapshot")[-1]["cursor"]
    assert fresh["conversation_id"] == widget.chat.conversation_id != cursor["conversation_id"]
    assert fresh["position"] == 0


@pytest.mark.parametrize(
    "after", ["3", "", -1, 10**30, 2.0, 3.5, float("nan"), True, False, None, [], {"n": 1}]
)
async def test_malformed_cursors_get_a_snapshot_and_never_an_exception(
    cleanup: list[ChatWidget], after: Any
) -> None:
    widget, comm, _ = await make([{"text": "One."}])
    cleanup.append(widget)
    await widget.run_turn("First")
    cursor = back(comm.of("turn_end")[-1]["cursor"])
    answer = await hello(widget, comm, **{**cursor, "after": after})
    assert answer["type"] == "snapshot" and answer["turns"][0]["answer"] == "One."
    for field, value in (("conversation_id", 7), ("epoch", ["x"])):
        answer = await hello(widget, comm, **{**cursor, field: value})
        assert answer["type"] == "snapshot"
    assert (await hello(widget, comm, **cursor))["type"] == "replay"  # the widget still works


async def test_a_turn_the_journal_does_not_hold_starts_a_new_epoch(
    cleanup: list[ChatWidget],
) -> None:
    """A message refused before it is admitted (blank text) is not journaled: a view that
    missed it resyncs."""
    widget, comm, _ = await make([{"text": "One."}])
    cleanup.append(widget)
    await widget.run_turn("First")
    cursor = back(comm.of("turn_end")[-1]["cursor"])
    record = await widget.run_turn("   ")
    assert record["error"]["code"] == "bad_message"
    ended = comm.of("turn_end")[-1]["cursor"]
    assert ended["epoch"] != cursor["epoch"] and ended["position"] == cursor["after"]
    missed = await hello(widget, comm, **cursor)
    assert missed["type"] == "snapshot" and len(missed["turns"]) == 2
    assert (await hello(widget, comm, **back(ended)))["turns"] == []  # a live view is current


async def test_a_refused_turn_is_journaled_like_any_widget_turn(
    cleanup: list[ChatWidget],
) -> None:
    """Widget turns are admitted under their own turn id: one refused at its start (a spent
    budget) ends with its refusal in the journal, so a view that missed it gets a replay."""
    widget, comm, _ = await make(
        [{"text": "One."}], rate_limit={"requests": 1, "window_seconds": 600}
    )
    cleanup.append(widget)
    await widget.run_turn("First")
    cursor = back(comm.of("turn_end")[-1]["cursor"])
    record = await widget.run_turn("Second")
    assert record["error"]["code"] == "rate_limited"
    ended = comm.of("turn_end")[-1]["cursor"]
    assert ended["epoch"] == cursor["epoch"] and ended["position"] == cursor["after"] + 1
    assert record["events"][-1]["position"] == ended["position"]
    missed = await hello(widget, comm, **cursor)
    assert missed["type"] == "replay" and [t["question"] for t in missed["turns"]] == ["Second"]
