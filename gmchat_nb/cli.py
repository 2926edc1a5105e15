"""The ``gmchat`` command.

``gmchat tool NAME 'JSON_ARGS'`` prints exactly the result a model would get from that tool call
(exit 0 even for an error result; exit 2 for bad command-line input). ``gmchat serve-demo`` serves
an embedded demo project's GraphQL over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .core.project.targets import DEMO_TARGETS, demo_name

__all__ = ["main"]

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
        description="Run one chat tool (search_managers, get_manager_schema, find_path, query, "
        "mutate, or query_<manager>) and print the JSON result a model would get.",
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
    ask.add_argument("--json", action="store_true", help="print one JSON event per line")
    cleanup = commands.add_parser(
        "cleanup",
        help="delete conversations older than ttl_hours from the store",
        description="Delete stale conversations and finished confirmations (settings: ttl_hours).",
    )
    cleanup.add_argument("--config", help="a YAML settings file")
    cleanup.add_argument("--store", help="the conversation store (default: settings)")
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
    from .core.project import connect

    project = await connect(
        target,
        exposed=exposed,
        headers=headers or None,
        cookies=cookies or None,
        allowed_mutations=options.allow_mutation,
    )
    try:
        return await project.call_tool(name, args)
    finally:
        await project.aclose()


def _ask(options: argparse.Namespace) -> int:
    from .chat import Chat
    from .core.settings import ChatConfigurationError
    from .terminal import ask_in_terminal

    overrides = {
        key: value
        for key, value in (
            ("project", options.project),
            ("provider", options.provider),
            ("store", options.store),
        )
        if value is not None
    }

    async def run() -> int:
        chat = Chat(settings=options.config, **overrides)
        try:
            return await ask_in_terminal(chat, options.question, as_json=options.json)
        finally:
            await chat.aclose()

    try:
        return asyncio.run(run())
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))
    except (ConnectionError, ImportError) as error:
        print(f"gmchat: {error}", file=sys.stderr)
        return EXIT_FAILURE


def _cleanup(options: argparse.Namespace) -> int:
    from .core.settings import ChatConfigurationError, load_settings
    from .core.store import ChatStore

    try:
        settings = load_settings(options.config)
    except ChatConfigurationError as error:
        return _usage(str(error))
    location = options.store or settings.store or ChatStore.default_path()
    with ChatStore(location) as store:
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
