"""Database URLs (the chat store's ``postgresql://…``): shown without their password, and checked
before anything connects."""

from __future__ import annotations

import importlib
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "is_postgresql_url",
    "postgresql_url_problem",
    "text_without_password",
    "without_password",
]


def is_postgresql_url(location: str) -> bool:
    """Whether a store location names a PostgreSQL database rather than a SQLite file."""
    return location.startswith(("postgresql://", "postgres://"))


def without_password(url: str) -> str:
    """A URL with its password replaced by ``***`` (for messages and logs); other text as is."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL (a bad port, a bracket): nothing of it is a password field
        return url
    if password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def text_without_password(text: str, url: str) -> str:
    """``text`` (an error's message, which may quote ``url``) with ``url``'s password as ``***``."""
    try:
        password = urlsplit(url).password
    except ValueError:  # not a URL: it has no password field
        return text
    return text.replace(password, "***") if password else text


def postgresql_url_problem(url: str) -> str | None:
    """What is wrong with a ``postgresql://`` URL as libpq reads it (an unknown query parameter,
    a space), in words that never show its password; None when it reads, or when psycopg is not
    installed (whoever connects says so)."""
    try:
        conninfo = importlib.import_module("psycopg.conninfo")
        psycopg = importlib.import_module("psycopg")
    except ImportError:
        return None
    try:
        conninfo.conninfo_to_dict(url)
    except psycopg.Error as error:
        return text_without_password(str(error).strip(), url)
    return None
