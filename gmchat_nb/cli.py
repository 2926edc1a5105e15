"""The ``gmchat`` command.

``gmchat tool NAME 'JSON_ARGS'`` prints exactly the result a model would get from that tool call
(exit 0 even for an error result; exit 2 for bad command-line input). ``gmchat serve-demo`` serves
an embedded demo project's GraphQL over HTTP on 127.0.0.1.

``gmchat knowledge`` is :mod:`gmchat_nb.cli_knowledge`'s and ``gmchat export`` (a conversation as
a notebook) :mod:`gmchat_nb.cli_export`'s; ``--user NAME`` (``ask``, ``knowledge``, ``export``)
acts as that person, ``local:NAME``.

``gmchat ask`` streams a turn through :mod:`gmchat_nb.terminal`; a planned (orchestrated) turn's
tool steps also name their task, and its plan is summed up after the answer (see
:class:`TerminalChat` and :func:`orchestration_lines`). Other turns print exactly as before.

Over 400 lines: the command's parser and one short function per sub-command; the parser
alone is a fifth of it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, TextIO

from .chat import Chat  # eager costs nothing: importing gmchat_nb (this package) imports it
from .cli_agent_tokens import add_agent_token_parser, agent_token
from .cli_export import add_export_parser, export
from .cli_knowledge import add_knowledge_parser, add_user_option, knowledge, user_actor
from .core.events import ChatEvent, ToolCall, ToolResult
from .core.project.targets import DEMO_TARGETS, demo_name
from .core.project.tools import TOOLS
from .core.toolcalls import EXECUTE, STAGES, CallScope, ToolCallPipeline, UnknownStage
from .core.turns import StoreUnavailableError

__all__ = ["TerminalChat", "ask_and_summarize", "for_terminal", "main", "orchestration_lines"]

EXIT_USAGE = 2
EXIT_FAILURE = 1


EXIT_BROKEN_PIPE = 141  # what a shell reports for a writer killed by SIGPIPE (128 + 13)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status. A reader that stops early
    (``gmchat tool … | head``) ends the command quietly, as it ends any Unix tool."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # Python would print a traceback when it flushes stdout at exit: point it at nothing.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    if options.command == "tool":
        return _tool(parser, options)
    if options.command == "serve-demo":
        return _serve_demo(options)
    if options.command == "ask":
        return _ask(options)
    if options.command == "cleanup":
        return _cleanup(options)
    if options.command == "doctor":
        return _doctor(options)
    if options.command == "mcp":
        return _mcp(options)
    if options.command == "knowledge":
        return knowledge(options)
    if options.command == "agent-token":
        return agent_token(options)
    if options.command == "export":
        return export(options)
    parser.print_help()
    return EXIT_USAGE


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gmchat", description="gmchat_nb: chat with a GeneralManager project's data."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    tool = commands.add_parser(
        "tool",
        help="run one chat tool and print its JSON result",
        description=f"Run one chat tool ({', '.join(TOOLS.names)}, or query_<manager>) and print "
        "the JSON result a model would get.",
    )
    tool.add_argument("name", help="tool name, e.g. query")
    tool.add_argument("args", nargs="?", default="{}", help="tool arguments as a JSON object")
    tool.add_argument(
        "--project",
        default="demo",
        help="demo (the inventory demo), large, or the URL of a GraphQL endpoint",
    )
    tool.add_argument("--exposed", help="comma-separated manager names the assistant may see")
    tool.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K:V",
        help="HTTP header for a remote project (repeatable)",
    )
    tool.add_argument(
        "--cookie", action="append", default=[], metavar="K=V", help="cookie (repeatable)"
    )
    tool.add_argument(
        "--allow-mutation",
        action="append",
        default=[],
        metavar="NAME",
        help="let mutate run this mutation (repeatable); none are allowed otherwise",
    )
    tool.add_argument(
        "--skip-stage",
        action="append",
        default=[],
        metavar="NAME",
        help="switch a stage of the tool-call pipeline off (repeatable): "
        + ", ".join(name for name in STAGES if name != EXECUTE),
    )
    ask = commands.add_parser(
        "ask",
        help="ask a question and stream the answer",
        description="Run one chat turn: tool steps, result tables and the streamed answer.",
    )
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument("--project", help="demo, large, or a GraphQL URL (default: settings)")
    ask.add_argument("--provider", help="e.g. offline, openai:gpt-4.1-mini, scripted:FILE.yaml")
    ask.add_argument("--config", help="a YAML settings file")
    ask.add_argument("--store", help="the conversation store (a path, or :memory:)")
    ask.add_argument(
        "--provider-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a provider setting over the settings file's, e.g. max_tokens=128 (repeatable)",
    )
    ask.add_argument("--json", action="store_true", help="print one JSON event per line")
    add_user_option(ask)
    add_knowledge_parser(commands)
    add_agent_token_parser(commands)
    add_export_parser(commands)
    mcp = commands.add_parser(
        "mcp",
        help="serve the chat's tools to an agent over MCP (stdio)",
        description="Run an MCP server on stdin/stdout with the chat's tools and settings "
        "(project, exposed managers, allowed and confirmed mutations, headers, rate limits, "
        "audit). Needs the [mcp] extra.",
    )
    mcp.add_argument("--project", help="demo, large, or a GraphQL URL (default: settings)")
    mcp.add_argument("--config", help="a YAML settings file")
    mcp.add_argument("--store", help="the conversation store (a path, or :memory:)")
    cleanup = commands.add_parser(
        "cleanup",
        help="delete conversations older than ttl_hours from the store",
        description="Delete stale conversations and finished confirmations (settings: ttl_hours).",
    )
    cleanup.add_argument("--config", help="a YAML settings file")
    cleanup.add_argument("--store", help="the conversation store (default: settings)")
    doctor = commands.add_parser(
        "doctor",
        help="probe what a provider (a local inference server) can do",
        description="Send a provider the requests a chat turn makes -- a streamed answer, a "
        "tool call, a round with tool history, usage, a structured answer -- and say what "
        "works, with the setting that fixes what does not. Exit 0 when a turn can work.",
    )
    doctor.add_argument("--provider", help="e.g. openai:MODEL, local:PATH.gguf (default: settings)")
    doctor.add_argument(
        "--provider-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a provider setting, e.g. base_url=http://127.0.0.1:8080/v1 (repeatable)",
    )
    doctor.add_argument("--config", help="a YAML settings file")
    doctor.add_argument(
        "--timeout", type=float, default=30, help="seconds for each probe (default 30)"
    )
    serve = commands.add_parser(
        "serve-demo",
        help="serve a demo project's GraphQL over HTTP on 127.0.0.1",
        description="Serve a demo project's GraphQL endpoint on 127.0.0.1 until interrupted.",
    )
    serve.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    serve.add_argument("--project", default="demo", choices=DEMO_TARGETS)
    serve.add_argument("--token", help="require 'Authorization: Bearer TOKEN' or cookie gm_token")
    serve.add_argument(
        "--managers", type=int, help="number of managers of the large demo (default 150)"
    )
    return parser


def _doctor(options: argparse.Namespace) -> int:
    from .core.providers.doctor import diagnose, format_diagnosis
    from .core.providers.registry import config_pairs, create_provider
    from .core.settings import ChatConfigurationError, load_settings

    try:
        overrides = config_pairs(options.provider_config)
        settings = load_settings(options.config)
        config = {**settings.provider_config, **overrides}
        provider = create_provider(options.provider or settings.provider, config)
    except (ChatConfigurationError, ValueError, ImportError) as error:
        return _usage(str(error))
    diagnosis = asyncio.run(diagnose(provider, timeout=options.timeout))
    print(format_diagnosis(diagnosis))
    return 0 if diagnosis.ok else EXIT_FAILURE


def _tool(parser: argparse.ArgumentParser, options: argparse.Namespace) -> int:
    try:
        args = json.loads(options.args)
    except ValueError as error:
        return _usage(f"JSON_ARGS is not valid JSON: {error}")
    if not isinstance(args, dict):
        return _usage('JSON_ARGS must be a JSON object, e.g. \'{"query": "parts"}\'.')
    try:
        headers = _pairs(options.header, ":", "--header")
        cookies = _pairs(options.cookie, "=", "--cookie")
    except ValueError as error:
        return _usage(str(error))
    exposed = [name.strip() for name in options.exposed.split(",")] if options.exposed else None
    try:
        ToolCallPipeline(CallScope(kind="command", project=None), skip=options.skip_stage)
    except UnknownStage as error:
        return _usage(f"--skip-stage: {error}")
    if options.skip_stage:  # said, so a result without a defence is never mistaken for one
        print(f"gmchat: stages skipped: {', '.join(options.skip_stage)}", file=sys.stderr)
    try:
        result = asyncio.run(
            _run_tool(options.project, options.name, args, exposed, headers, cookies, options)
        )
    except (ValueError, TypeError) as error:
        return _usage(str(error))
    except ConnectionError as error:
        print(f"gmchat: {error}", file=sys.stderr)
        return EXIT_FAILURE
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return 0


async def _run_tool(
    target: str,
    name: str,
    args: dict[str, Any],
    exposed: list[str] | None,
    headers: dict[str, str],
    cookies: dict[str, str],
    options: argparse.Namespace,
) -> Any:
    from .core.guards.turn import GuardSettings, TurnGuards
    from .core.project import connect
    from .core.providers.base import ToolCallEvent

    project = await connect(
        target,
        exposed=exposed,
        headers=headers or None,
        cookies=cookies or None,
        allowed_mutations=options.allow_mutation,
    )
    # The person at the terminal typed the call (origin "command"): it runs as asked, through
    # every stage of the chat's tool calls that is not skipped.
    scope = CallScope(
        kind="command",
        project=project,
        guards=TurnGuards(GuardSettings(gates=frozenset(), mutation_intent=False), ()),
        origin="command",
        allowed_mutations=frozenset(options.allow_mutation),
    )
    try:
        record = await ToolCallPipeline(scope, skip=options.skip_stage).run(
            ToolCallEvent("gmchat-tool", name, args)
        )
    finally:
        await project.aclose()
    if record.flags:
        print(
            f"gmchat: {len(record.flags)} field(s) of the result hold text that looks written "
            "for an AI (the scan stage's flags):",
            file=sys.stderr,
        )
        for flag in record.flags:
            print(f"  {flag.get('path')}: {', '.join(flag.get('reasons', []))}", file=sys.stderr)
    return record.result


def _ask(options: argparse.Namespace) -> int:
    from .core.providers.registry import config_pairs
    from .core.settings import ChatConfigurationError, load_settings

    overrides: dict[str, Any] = {
        key: value
        for key, value in (
            ("project", options.project),
            ("provider", options.provider),
            ("store", options.store),
        )
        if value is not None
    }
    try:
        if options.provider_config:
            given = config_pairs(options.provider_config)
            base = load_settings(options.config).provider_config
            overrides["provider_config"] = {**base, **given}
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))

    try:
        actor = user_actor(options.user)  # one person, one owner of knowledge on every surface
    except ValueError as error:
        return _usage(str(error))

    async def run() -> int:
        # --json prints the events as they are (a planned turn's fields included).
        kind = Chat if options.json else TerminalChat
        chat = kind(settings=options.config, actor=actor, **overrides)
        try:
            return await ask_and_summarize(chat, options.question, as_json=options.json)
        finally:
            await chat.aclose()

    try:
        return asyncio.run(run())
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))
    except (ConnectionError, ImportError, StoreUnavailableError, sqlite3.Error) as error:
        print(f"gmchat: {error}", file=sys.stderr)  # the project or the store is out of reach
        return EXIT_FAILURE


# -- planned turns in the terminal ----------------------------------------------------------------

# Why a planned turn's task went unanswered, in the words a reader of the answer needs.
REASONS: dict[str, str] = {
    "invalid_plan": "no safe plan could be made for it",
    "manager_unresolved": "no matching data found",
    "dependency_blocked": "a task it depends on failed",
    "budget_exhausted": "reached its execution limit",
    "deadline_exceeded": "reached its time limit",
    "provider_failed": "the model failed",
    "synthesis_failed": "no grounded answer could be written from its data",
}


class TerminalChat(Chat):
    """The chat as ``gmchat ask`` prints it: a planned turn's tool steps name their task.

    :mod:`gmchat_nb.terminal` prints a step as ``→ [1] NAME ARGS`` and its result as
    ``← [1] NAME``; a planned step reaches it as :func:`for_terminal` renames it, so the lines
    read ``→ [1] task_1 query {...}``. ``turns`` keeps the events as the turn reported them.
    """

    async def stream(self, text: str, *, turn_id: str | None = None) -> AsyncIterator[ChatEvent]:
        # a subclass of this chat may still override stream(text) alone: pass the id only if set
        events = super().stream(text) if turn_id is None else super().stream(text, turn_id=turn_id)
        async for event in events:
            yield for_terminal(event)


def for_terminal(event: ChatEvent) -> ChatEvent:
    """``event`` as the terminal shows it: a planned tool step's name led by its task id, a
    planned query's result followed by its evidence id; any other event is returned as is."""
    if not isinstance(event, ToolCall | ToolResult):
        return event
    # getattr: works whether or not the event classes carry the (optional) planned fields.
    task = getattr(event, "task_id", None)
    evidence = getattr(event, "evidence_id", None) if isinstance(event, ToolResult) else None
    if not task and not evidence:
        return event
    name = f"{task} {event.name}" if task else event.name
    return dataclasses.replace(event, name=f"{name} ({evidence})" if evidence else name)


def orchestration_lines(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The summary of a planned turn (its ``done`` event's ``orchestration``), one line each:
    ``plan: 2 tasks, 1 resolved (partial)``, every unresolved task with its reason, every
    calculation ``task_1:calculation:2 sum = 1234.5 EUR (7 inputs)``. None for other turns."""
    done = next((e for e in reversed(list(events)) if e.get("type") == "done"), None)
    plan = done.get("orchestration") if done is not None else None
    if not isinstance(plan, Mapping):
        return []
    tasks = [task for task in plan.get("tasks") or [] if isinstance(task, Mapping)]
    given = plan.get("coverage")
    coverage: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    total = coverage.get("total", len(tasks))
    resolved = coverage.get("resolved", sum(task.get("status") == "resolved" for task in tasks))
    status = plan.get("status") or "complete"
    lines = [f"plan: {_count(total, 'task')}, {resolved} resolved ({status})"]
    for item in plan.get("unresolved") or []:
        if isinstance(item, Mapping):
            reason = str(item.get("reason"))
            why = REASONS.get(reason, "could not be completed")
            lines.append(f"{item.get('task_id')} unresolved: {why} ({reason})")
    for calculation in plan.get("calculations") or []:
        if isinstance(calculation, Mapping):
            lines.append(_calculation_line(calculation))
    return lines


def _calculation_line(calculation: Mapping[str, Any]) -> str:
    value = calculation.get("value")
    unit = calculation.get("unit")
    result = calculation.get("text") if value is None else f"{value} {unit}" if unit else value
    inputs = calculation.get("input_count", len(calculation.get("inputs") or []))
    return (
        f"{calculation.get('evidence_id')} {calculation.get('operation')} = {result}"
        f" ({_count(inputs, 'input')})"
    )


def _count(number: Any, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


async def ask_and_summarize(
    chat: Chat, question: str, *, as_json: bool = False, out: TextIO | None = None
) -> int:
    """Stream one turn to ``out`` (:func:`gmchat_nb.terminal.ask_in_terminal`), then, for a
    planned turn in text mode, its :func:`orchestration_lines`; returns the turn's exit status."""
    from .terminal import ask_in_terminal

    out = out if out is not None else sys.stdout
    status = await ask_in_terminal(chat, question, as_json=as_json, out=out)
    if not as_json and chat.turns:
        for line in orchestration_lines(chat.turns[-1].events):
            print(line, file=out)
    return status


def _mcp(options: argparse.Namespace) -> int:
    from .core.settings import ChatConfigurationError, load_settings

    overrides = {
        key: value
        for key, value in (("project", options.project), ("store", options.store))
        if value is not None
    }
    try:
        settings = load_settings(options.config, **overrides)
        from .mcp_server.stdio import serve_stdio
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))
    except ImportError as error:
        print(
            f"gmchat mcp needs the [mcp] extra (pip install 'gmchat_nb[mcp]'): {error}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    try:
        asyncio.run(serve_stdio(settings))
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))
    except ConnectionError as error:
        print(f"gmchat: {error}", file=sys.stderr)
        return EXIT_FAILURE
    return 0


def _cleanup(options: argparse.Namespace) -> int:
    from .core.session import open_store
    from .core.settings import ChatConfigurationError, load_settings

    try:
        settings = load_settings(options.config)
    except ChatConfigurationError as error:
        return _usage(str(error))
    with open_store(settings, options.store) as store:
        removed = store.cleanup(settings.ttl_hours)
    print(json.dumps(removed))
    return 0


def _serve_demo(options: argparse.Namespace) -> int:
    from .core.project.demo import serve_forever

    name = demo_name(options.project) or options.project
    spec_options: dict[str, Any] = {}
    if options.managers is not None:
        if name not in ("large", "synthetic"):
            return _usage("--managers applies to --project large or synthetic only.")
        spec_options["manager_count"] = options.managers
    try:
        serve_forever(name, port=options.port, token=options.token, **spec_options)
    except ValueError as error:
        return _usage(str(error))
    except OSError as error:
        print(f"gmchat: cannot serve on port {options.port}: {error}", file=sys.stderr)
        return EXIT_FAILURE
    return 0


def _pairs(items: list[str], separator: str, option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(separator)
        if not found or not key.strip():
            raise ValueError(f"{option} takes KEY{separator}VALUE; got {item!r}.")
        pairs[key.strip()] = value.strip()
    return pairs


def _usage(message: str) -> int:
    print(f"gmchat: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
