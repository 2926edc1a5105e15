"""``gmchat knowledge``: a project's verified queries, definitions and notes from a terminal.

Every sub-command takes ``--project``, ``--config`` and ``--store`` as ``gmchat ask`` does, and
``--user NAME`` to act as that person (the actor ``local:NAME``, whose knowledge is owned by
``NAME`` on every surface; by default the operating system's user)::

    gmchat knowledge import FILE [--confirm-flagged] [--json]
    gmchat knowledge add definition --term TERM --text TEXT
    gmchat knowledge add note --text TEXT
    gmchat knowledge add verified-query --name NAME --question Q --calls JSON|@FILE [--personal]
    gmchat knowledge accept ID [--personal]
    gmchat knowledge list [--json] [--kind K] [--status S] [--search WORDS]
    gmchat knowledge show ID [--json]
    gmchat knowledge remove ID | --mine
    gmchat knowledge export [--as-eval] [--output FILE]
    gmchat knowledge check [--json]

``--calls``: JSON calls (``[{"tool", "arguments"}]``), one call, or a query's arguments alone;
``@FILE`` reads them from a file (JSON or YAML). See docs/knowledge.md.

Exit status: 0 done; 1 ``check`` found a stale verified query, or no such entry (``show``,
``remove``, ``accept``), or the project or store could not be reached; 2 the request was refused
as given (bad options, a bad file or YAML, an entry that does not compile against the project,
a duplicate, a flagged entry without ``--confirm-flagged``). An import is all or nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core.knowledge import (
    KnowledgeBook,
    KnowledgeError,
    KnowledgeRecord,
    entry_json,
    person_of,
)
from .core.knowledge.yaml_io import dump, read, read_file
from .core.project.tools import TOOLS
from .core.session.actor import Actor
from .core.turns import StoreUnavailableError

__all__ = ["add_knowledge_parser", "add_user_option", "knowledge", "user_actor"]

EXIT_FAILURE = 1
EXIT_USAGE = 2
_USER = re.compile(r"[\w.@+-]{1,128}")
_KINDS = {"verified-query": "verified_query", "definition": "definition", "note": "note"}
NAME_WIDTH = 48
_CONFIRM = "store an entry the injection scorer flags (you read it and mean it)"


def add_user_option(parser: argparse.ArgumentParser) -> None:
    """``--user NAME``: the person the command acts as (``gmchat ask`` takes it too)."""
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="act as this person (the actor local:NAME; default: your operating system user)",
    )


def user_actor(name: str | None) -> Actor:
    """The actor ``--user NAME`` names (``local:NAME``), the operating system's user without
    one; ``ValueError`` for a name that is not one."""
    if name is None:
        return Actor.local()
    if not _USER.fullmatch(name):
        raise ValueError(
            f"--user takes a user name (letters, digits and . _ - @ +, at most 128), "
            f"not {name[:80]!r}."
        )
    return Actor(id=f"local:{name}", name=name, authenticated=True)


def add_knowledge_parser(commands: Any) -> None:
    """The ``knowledge`` command and its sub-commands, on ``gmchat``'s sub-parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--project", help="demo, large, or a GraphQL URL (default: settings)")
    common.add_argument("--config", help="a YAML settings file")
    common.add_argument("--store", help="the conversation store (a path or a postgresql:// URL)")
    add_user_option(common)
    knowledge = commands.add_parser(
        "knowledge",
        help="a project's verified queries, definitions and notes",
        description="List, add, import, export, check and remove what the assistant recalls "
        "before each turn. See docs/knowledge.md.",
    )
    actions = knowledge.add_subparsers(dest="action", metavar="ACTION")

    def action(name: str, summary: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, parents=[common], help=summary)
        return parser

    imported = action("import", "import a YAML file (all or nothing)")
    imported.add_argument("file", help="the YAML file (- for standard input)")
    add = action("add", "add an entry")
    add.add_argument("kind", choices=tuple(_KINDS), help="what to add")
    add.add_argument("--name", help="a verified query's name")
    add.add_argument("--question", help="the question a verified query answers")
    add.add_argument("--calls", help="a verified query's calls as JSON or @FILE (see the docs)")
    add.add_argument("--term", help="a definition's term")
    add.add_argument("--text", help="a definition's meaning or a note's text")
    add.add_argument("--personal", action="store_true", help="a personal verified query")
    accept = action("accept", "accept a suggestion")
    accept.add_argument("id")
    accept.add_argument("--personal", action="store_true", help="keep it personal")
    listed = action("list", "the entries you may see")
    listed.add_argument("--kind", choices=tuple(_KINDS.values()))
    listed.add_argument("--status", choices=("active", "suggested", "stale"))
    listed.add_argument("--search", help="only entries with these words")
    show = action("show", "one entry")
    show.add_argument("id")
    remove = action("remove", "forget an entry, or all of yours")
    remove.add_argument("id", nargs="?")
    remove.add_argument("--mine", action="store_true", help="every entry you wrote (nobody else's)")
    export = action("export", "YAML of the active entries")
    export.add_argument("--as-eval", action="store_true", help="verified queries as eval cases")
    export.add_argument("--output", metavar="FILE", help="write to FILE, not standard output")
    check = action("check", "compile every verified query against the project's schema")
    for parser in (imported, add, accept):
        parser.add_argument("--confirm-flagged", action="store_true", help=_CONFIRM)
    for parser in (imported, add, listed, show, check):
        parser.add_argument("--json", action="store_true", help="print JSON")


def knowledge(options: argparse.Namespace) -> int:
    """Run ``gmchat knowledge ACTION``; returns the exit status."""
    action = ACTIONS.get(options.action or "")
    if action is None:
        return _usage("knowledge needs an action: " + ", ".join(ACTIONS))
    from .core.settings import ChatConfigurationError

    try:
        actor = user_actor(options.user)
        return asyncio.run(_with_book(options, actor, action))
    except (ChatConfigurationError, ValueError) as error:
        return _usage(str(error))
    except (ConnectionError, ImportError, OSError, StoreUnavailableError, sqlite3.Error) as error:
        print(f"gmchat: {error}", file=sys.stderr)  # the project or the store is out of reach
        return EXIT_FAILURE


Action = Callable[[KnowledgeBook, argparse.Namespace], int]
_WRITES = {"import", "add", "accept"}  # the actions that store a vector of an entry


async def _with_book(options: argparse.Namespace, actor: Actor, action: Action) -> int:
    from .core.session.compose import connect_project, open_store
    from .core.settings import load_settings

    overrides = {
        key: value
        for key, value in (("project", options.project), ("store", options.store))
        if value is not None
    }
    settings = load_settings(options.config, **overrides)
    project = await connect_project(settings)
    try:
        with open_store(settings, options.store) as store:
            book = KnowledgeBook(
                store,
                project,
                project_key=project.identity,
                owner=person_of(actor.id),
                # only a write needs the embedding model (it stores the entry's vector)
                vectors="auto" if options.action in _WRITES else None,
            )
            try:
                return action(book, options)
            except KnowledgeError as error:
                return _refused(error, options)
    finally:
        await project.aclose()


def _refused(error: KnowledgeError, options: argparse.Namespace) -> int:
    hint = " (with --confirm-flagged)" if error.code == "flagged" else ""
    where = f"knowledge {options.action}" + (
        f" {options.file}" if options.action == "import" else ""
    )
    print(f"gmchat: {where}: {error.message}{hint} [{error.code}]", file=sys.stderr)
    return EXIT_FAILURE if error.code == "not_found" else EXIT_USAGE


# -- the actions ----------------------------------------------------------------------------------


def _import(book: KnowledgeBook, options: argparse.Namespace) -> int:
    data = read(sys.stdin.read()) if options.file == "-" else read_file(options.file)
    report = book.import_data(data, confirm_flagged=options.confirm_flagged)
    if options.json:
        _print_json(
            {
                "added": [entry_json(record) for record in report.added],
                "skipped": [
                    {"name": name, "existing": existing} for name, existing in report.skipped
                ],
            }
        )
        return 0
    if report.added:
        added = ", ".join(_label(record) for record in report.added)
        print(f"imported {_count(len(report.added), 'entry', 'entries')}: {added}")
    else:
        print("imported nothing new")
    if report.skipped:
        skipped = ", ".join(f"{_clip(name)} ({existing})" for name, existing in report.skipped)
        print(f"skipped {len(report.skipped)} already stored: {skipped}")
    return 0


def _add(book: KnowledgeBook, options: argparse.Namespace) -> int:
    kind = _KINDS[options.kind]
    needed = {
        "verified_query": ("name", "question", "calls"),
        "definition": ("term", "text"),
        "note": ("text",),
    }[kind]
    missing = [f"--{name}" for name in needed if getattr(options, name) is None]
    if missing:
        return _usage(f"knowledge add {options.kind} needs {', '.join(missing)}.")
    stray = [
        f"--{name}"
        for name in ("name", "question", "calls", "term", "text")
        if name not in needed and getattr(options, name) is not None
    ]
    if options.personal and kind != "verified_query":
        stray.append("--personal")  # a definition is shared, a note always personal
    if stray:
        return _usage(f"knowledge add {options.kind} does not take {', '.join(stray)}.")
    confirm = options.confirm_flagged
    if kind == "verified_query":
        scope = "personal" if options.personal else "shared"
        record = book.add_verified_query(
            options.name,
            options.question,
            calls_option(options.calls),
            scope=scope,
            confirm_flagged=confirm,
        )
    elif kind == "definition":
        record = book.add_definition(options.term, options.text, confirm_flagged=confirm)
    else:
        record = book.add_note(options.text, confirm_flagged=confirm)
    if options.json:
        _print_json(entry_json(record))
    else:
        print(f"added {_label(record)}")
    return 0


def _accept(book: KnowledgeBook, options: argparse.Namespace) -> int:
    scope = "personal" if options.personal else None
    record = book.accept(options.id, scope=scope, confirm_flagged=options.confirm_flagged)
    print(f"accepted {_label(record)}")
    return 0


def _list(book: KnowledgeBook, options: argparse.Namespace) -> int:
    records = book.list(kind=options.kind, status=options.status, search=options.search)
    if options.json:
        _print_json([entry_json(record) for record in records])
        return 0
    if not records:
        print("no knowledge entries")
        return 0
    rows = [(r.id, r.kind, r.status, r.scope, r.owner, _clip(r.name, NAME_WIDTH)) for r in records]
    header = ("ID", "KIND", "STATUS", "SCOPE", "OWNER", "NAME")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return 0


def _show(book: KnowledgeBook, options: argparse.Namespace) -> int:
    item = entry_json(book.get(options.id))
    if options.json:
        _print_json(item)
        return 0
    calls = item.pop("calls", None)
    for key, value in item.items():
        if value is not None:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            print(f"{key}: {_printable(shown)}")
    for position, call in enumerate(calls or [], 1):
        arguments = json.dumps(call.get("arguments"), ensure_ascii=False)
        print(f"call {position}: {call.get('tool')} {_printable(arguments)}")
    return 0


def _remove(book: KnowledgeBook, options: argparse.Namespace) -> int:
    if options.mine == (options.id is not None):
        return _usage("knowledge remove takes an entry's ID or --mine (every entry you wrote).")
    if options.mine:
        removed = book.remove_mine()
        print(f"removed {_count(removed, 'entry', 'entries')} of yours ({book.owner})")
        return 0
    record = book.get(options.id)
    book.remove(record.id)
    print(f"removed {_label(record)}")
    return 0


def _export(book: KnowledgeBook, options: argparse.Namespace) -> int:
    if options.as_eval:
        from .core.knowledge.as_eval import as_eval_yaml

        text = as_eval_yaml(book.list(kind="verified_query", status="active"))
    else:
        text = dump(book.export_data())
    if options.output is None:
        sys.stdout.write(text)
        return 0
    try:
        Path(options.output).write_text(text, encoding="utf-8")
    except OSError as error:
        print(f"gmchat: cannot write {options.output}: {error}", file=sys.stderr)
        return EXIT_FAILURE
    print(f"wrote {options.output}", file=sys.stderr)
    return 0


def _check(book: KnowledgeBook, options: argparse.Namespace) -> int:
    stale = book.check()
    if options.json:
        _print_json({"stale": [{"id": s.id, "name": s.name, "reason": s.reason} for s in stale]})
    elif stale:
        for entry in stale:
            print(f"stale: {_clip(entry.name)} ({entry.id}): {_printable(entry.reason)}")
    else:
        count = len(book.list(kind="verified_query", status="active"))
        print(f"every verified query compiles against the project ({count})")
    return EXIT_FAILURE if stale else 0


ACTIONS: dict[str, Action] = {
    "import": _import,
    "add": _add,
    "accept": _accept,
    "list": _list,
    "show": _show,
    "remove": _remove,
    "export": _export,
    "check": _check,
}


# -- helpers --------------------------------------------------------------------------------------


def calls_option(value: str) -> Any:
    """``--calls``: JSON, or ``@FILE`` holding JSON or YAML; a single call or a query's
    arguments alone become a list of one call (the book checks the rest)."""
    if value.startswith("@"):
        calls = read_file(value[1:])
    else:
        try:
            calls = json.loads(value)
        except ValueError as error:
            raise KnowledgeError("invalid", f"--calls is not valid JSON: {error}") from None
    if isinstance(calls, dict):
        calls = [calls if "tool" in calls else {"tool": TOOLS.query.name, "arguments": calls}]
    return calls


def _label(record: KnowledgeRecord) -> str:
    return f"{record.kind} {_clip(record.name)!r} ({record.id})"


def _clip(text: str, width: int = 80) -> str:
    text = _printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _printable(text: str) -> str:
    # entries are people's text: no control character reaches the terminal
    return "".join(c if c.isprintable() else " " for c in text)


def _count(number: int, one: str, several: str) -> str:
    return f"{number} {one if number == 1 else several}"


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _usage(message: str) -> int:
    print(f"gmchat: {message}", file=sys.stderr)
    return EXIT_USAGE
