"""Where a project comes from, spelled one way on every surface: a demo name or a GraphQL URL.

``demo`` is the inventory demo and ``demo:NAME`` names any demo, so ``--project demo`` means the
same in ``gmchat tool``, ``gmchat ask``, ``gmchat serve-demo``, the eval CLI, settings files and
the widget. This module is light on purpose: settings import it, and importing the demos
themselves would bring their database and HTTP server into every settings import.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

__all__ = ["DEMO_NAMES", "DEMO_TARGETS", "demo_name", "describe_targets", "is_graphql_url"]

DEMO_NAMES: Final = ("inventory", "large", "toy", "synthetic")
"""The embedded demos (``gmchat_nb.core.project.demo`` builds one for each; a test holds them in
step)."""

DEMO_TARGETS: Final = ("demo", *DEMO_NAMES)
"""Every plain name a project setting or ``--project`` accepts for a demo."""


def demo_name(target: object) -> str | None:
    """The demo ``target`` names (``demo`` and ``demo:inventory`` -> ``inventory``), else None."""
    if not isinstance(target, str):
        return None
    name = "inventory" if target == "demo" else target.removeprefix("demo:")
    return name if name in DEMO_NAMES else None


def is_graphql_url(target: object) -> bool:
    """True for an ``http(s)://host/...`` string."""
    if not isinstance(target, str):
        return False
    parts = urlsplit(target)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def describe_targets() -> str:
    """What a project target may be, for error messages."""
    return f"a demo name ({', '.join(DEMO_TARGETS)}, or demo:NAME) or an http(s) GraphQL URL"
