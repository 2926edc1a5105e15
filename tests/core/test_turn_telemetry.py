"""A real turn's trace: ``Turn.trace`` and its OpenTelemetry spans with the SDK configured.

The OpenTelemetry SDK is configured in a child process: a global tracer provider can be set only
once per process, and the rest of the suite runs without one (as a library user without the
``[otel]`` extra would)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from gmchat_nb import Chat

SCRIPT = textwrap.dedent(
    """
    import asyncio, json
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    from gmchat_nb import Chat

    async def main():
        chat = Chat(store=":memory:")
        try:
            await chat.ask("Which parts are made of steel?")
        finally:
            await chat.aclose()

    asyncio.run(main())
    spans = exporter.get_finished_spans()
    ids = {span.context.span_id: span.name for span in spans}
    print(json.dumps([
        {
            "name": span.name,
            "kind": span.kind.name,
            "parent": ids.get(span.parent.span_id) if span.parent else None,
            "attributes": {k: (list(v) if isinstance(v, tuple) else v)
                           for k, v in (span.attributes or {}).items()},
        }
        for span in spans
    ]))
    """
)


def test_a_turn_yields_the_documented_span_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    spans = json.loads(done.stdout.strip().splitlines()[-1])
    by_name = {span["name"]: span for span in spans}
    root = by_name["invoke_agent gmchat_nb"]
    assert root["parent"] is None and root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attributes"]["gen_ai.agent.name"] == "gmchat_nb"
    assert root["attributes"]["gen_ai.conversation.id"]
    chats = [span for span in spans if span["name"].startswith("chat ")]
    tools = [span for span in spans if span["name"].startswith("execute_tool ")]
    assert chats and tools
    assert all(span["parent"] == root["name"] for span in chats + tools)
    assert (
        chats[0]["kind"] == "CLIENT" and chats[0]["attributes"]["gen_ai.operation.name"] == "chat"
    )
    query = by_name["execute_tool query"]
    assert query["kind"] == "INTERNAL"
    assert query["attributes"]["gen_ai.tool.name"] == "query"
    assert query["attributes"]["gen_ai.tool.type"] == "function"
    assert query["attributes"]["gmchat.tool.rows"] == 1
    # no message content without OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
    assert not any("gen_ai.tool.call.arguments" in span["attributes"] for span in spans)


async def test_turn_trace_records_model_requests_and_tool_calls() -> None:
    chat = Chat(store=":memory:")
    try:
        turn = await chat.ask("Which parts are made of steel?")
    finally:
        await chat.aclose()
    assert turn.trace is not None and turn.trace.finished
    exported = json.loads(turn.trace.to_json())
    root = exported["root"]
    assert root["attributes"]["status"] == "done"
    kinds = [child["kind"] for child in root["children"]]
    assert kinds.count("tool_call") == sum(e["type"] == "tool_call" for e in turn.events)
    assert "model_request" in kinds
    query = [c for c in root["children"] if c["name"] == "execute_tool query"][-1]
    assert query["attributes"]["status"] == "ok" and query["attributes"]["rows"] == 1
    assert query["duration_ms"] >= 0
