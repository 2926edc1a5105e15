"""Who and what knowledge belongs to: a project's identity and a person's.

A **project** is named once, by the ``project_id`` setting when it is set, else by where it is:
a demo by its name (``demo:inventory``), a GraphQL URL without its credentials, query or
fragment (``https://erp.example.com/graphql``; two URLs that differ only in a password or a
token in the query are one project), a schema object by a digest of its SDL. The id is stored on
every knowledge row and conversation.

A **person** is one owner whichever surface they use: the store's actor ids carry the surface
(``local:alice`` from a notebook or ``gmchat``, ``jupyter:alice`` from the server extension), and
knowledge is owned by the name after that prefix (``alice``). ``gmchat --user NAME`` acts as
that person on the command line (it has the store's file or URL anyway).
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..project.targets import demo_name, is_graphql_url

__all__ = ["person_of", "project_key"]

_SURFACES = ("local:", "jupyter:")


def project_key(target: Any, project_id: str | None = None) -> str:
    """The identity of the project ``target`` names (see the module)."""
    if project_id:
        return str(project_id)
    demo = demo_name(target)
    if demo is not None:
        return f"demo:{demo}"
    if is_graphql_url(target):
        parts = urlsplit(str(target))
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme.lower(), netloc.lower(), parts.path or "/", "", ""))
    if isinstance(target, str) and target:
        return target
    try:
        from graphql import print_schema

        schema = getattr(target, "schema", target)
        text = print_schema(schema)
    except Exception:  # anything else: one identity for the process's unnamed projects
        return "schema:unnamed"
    return "schema:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def person_of(actor_id: str) -> str:
    """The person an actor id belongs to: the name after its surface's prefix."""
    for prefix in _SURFACES:
        if actor_id.startswith(prefix):
            return actor_id[len(prefix) :]
    return actor_id
