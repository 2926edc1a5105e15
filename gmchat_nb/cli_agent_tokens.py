"""``gmchat agent-token``: make, list and revoke the tokens agents use on the MCP route.

::

    gmchat agent-token create --name NAME [--scopes read,propose] [--expires 90d|12h|never]
    gmchat agent-token list [--json]
    gmchat agent-token revoke ID | --name NAME

Each takes ``--config`` and ``--store`` as ``gmchat ask`` does (the store the Jupyter server
uses, where the MCP route looks tokens up) and ``--user NAME``: the person the token acts as
(the Jupyter user name; by default the operating system's user, who is the user of a stock
single-user server). ``create`` prints the token alone on standard output, so
``TOKEN=$(gmchat agent-token create --name claude)`` keeps it out of the terminal's history,
and what it is on standard error; it is never shown again. See docs/mcp.md.

Anyone who can run this command as the store's owner can make tokens: it is the server
machine's own account, as the Jupyter token is.

Exit status: 0 done; 1 no such token (``revoke``) or the store could not be used; 2 refused as
given (a blank name, an unknown scope, a bad ``--expires``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import json
import sqlite3
import sys
import time
from typing import Any

from .cli_knowledge import add_user_option, user_actor
from .core.agent.tokens import DEFAULT_DAYS, AgentTokenError, AgentTokens, parse_expiry, token_json
from .core.knowledge import person_of
from .core.turns import StoreUnavailableError

__all__ = ["add_agent_token_parser", "agent_token"]

EXIT_FAILURE = 1
EXIT_USAGE = 2


def add_agent_token_parser(commands: Any) -> None:
    """The ``agent-token`` command and its sub-commands, on ``gmchat``'s sub-parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="a YAML settings file")
    common.add_argument("--store", help="the chat store (a path or a postgresql:// URL)")
    add_user_option(common)
    command = commands.add_parser(
        "agent-token",
        help="tokens for agents on the MCP route (read, propose changes; never decide them)",
        description="Make, list and revoke agent tokens. See docs/mcp.md.",
    )
    actions = command.add_subparsers(dest="action", metavar="ACTION")
    create = actions.add_parser("create", parents=[common], help="make a token (shown once)")
    create.add_argument("--name", required=True, help="what the token is for, e.g. claude-code")
    create.add_argument(
        "--scopes",
        default="read",
        help="read, or read,propose to let the agent propose changes a person confirms",
    )
    create.add_argument(
        "--expires", default=f"{DEFAULT_DAYS}d", help="30d, 12h, … or never (default: 90d)"
    )
    create.add_argument("--json", action="store_true", help="print the token and its record")
    listed = actions.add_parser("list", parents=[common], help="your tokens")
    listed.add_argument("--json", action="store_true", help="print JSON")
    revoke = actions.add_parser("revoke", parents=[common], help="revoke a token at once")
    revoke.add_argument("id", nargs="?", help="the token's id (at_…), as list shows it")
    revoke.add_argument("--name", help="every active token of yours with this name")


def agent_token(options: argparse.Namespace) -> int:
    """Run ``gmchat agent-token ACTION``; returns the exit status."""
    if options.action not in ("create", "list", "revoke"):
        print("gmchat: agent-token needs an action: create, list, revoke", file=sys.stderr)
        return EXIT_USAGE
    from .core.session.compose import open_store
    from .core.settings import ChatConfigurationError, load_settings

    try:
        owner = person_of(user_actor(options.user).id) if options.user else getpass.getuser()
        overrides = {"store": options.store} if options.store is not None else {}
        settings = load_settings(options.config, **overrides)
        with open_store(settings, options.store) as store:
            return _run(AgentTokens(store), owner, options)
    except AgentTokenError as error:
        print(f"gmchat: agent-token {options.action}: {error.message}", file=sys.stderr)
        return EXIT_FAILURE if error.code == "not_found" else EXIT_USAGE
    except (ChatConfigurationError, ValueError) as error:
        print(f"gmchat: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, StoreUnavailableError, sqlite3.Error) as error:
        print(f"gmchat: {error}", file=sys.stderr)
        return EXIT_FAILURE


def _run(tokens: AgentTokens, owner: str, options: argparse.Namespace) -> int:
    now = time.time()
    if options.action == "create":
        scopes = [part.strip() for part in options.scopes.split(",") if part.strip()]
        made = tokens.create(owner, options.name, scopes, parse_expiry(options.expires))
        if options.json:
            print(json.dumps({"token": token_json(made.record, now), "secret": made.secret}))
            return 0
        print(made.secret)
        record = made.record
        print(
            f"Agent token {record.name!r} ({record.id}) for {owner}: {', '.join(record.scopes)}, "
            f"{_expiry(record.expires_at)}. It is shown only now: put it in the agent's "
            "configuration as 'Authorization: Bearer <token>'.",
            file=sys.stderr,
        )
        return 0
    if options.action == "revoke":
        if (options.id is None) == (options.name is None):
            raise AgentTokenError("invalid", "revoke takes a token's id or --name, not both.")
        named = [
            r.id for r in tokens.list(owner) if r.name == options.name and r.state(now) == "active"
        ]
        if options.name is not None and not named:
            message = f"You have no active agent token named {options.name[:100]!r}."
            raise AgentTokenError("not_found", message)
        for token_id in [options.id] if options.id is not None else named:
            record = tokens.revoke(owner, token_id)
            print(f"Revoked {record.name!r} ({record.id}).", file=sys.stderr)
        return 0
    records = tokens.list(owner)
    if options.json:
        print(json.dumps({"tokens": [token_json(record, now) for record in records]}))
        return 0
    for record in records:
        used = _date(record.last_used_at) if record.last_used_at else "never used"
        print(
            f"{record.id}  {record.prefix}…  {record.state(now):7}  "
            f"{','.join(record.scopes):12}  {_expiry(record.expires_at):22}  {used}  "
            f"{record.name}"
        )
    if not records:
        print(f"{owner} has no agent tokens.", file=sys.stderr)
    return 0


def _date(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _expiry(at: float | None) -> str:
    return "never expires" if at is None else f"expires {_date(at)}"
