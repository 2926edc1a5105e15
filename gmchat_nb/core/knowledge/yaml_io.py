"""The YAML of knowledge import and export (the format in ``docs/knowledge.md``).

``verified_queries`` (name, question, calls of ``{tool, arguments}``, optional ``scope``),
``definitions`` (term, text) and ``notes`` (text). Export writes what :func:`read` reads, so an
export imported again changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .entries import KnowledgeError

__all__ = ["dump", "read", "read_file"]

MAX_BYTES = 5_000_000


def read(text: str) -> Any:
    """The mapping a YAML text holds (``KnowledgeError("invalid")`` for text that is not YAML)."""
    if len(text) > MAX_BYTES:
        raise KnowledgeError("invalid", f"knowledge YAML is larger than {MAX_BYTES} bytes")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise KnowledgeError("invalid", f"not valid YAML{where}") from None
    return {} if data is None else data


def read_file(path: str | Path) -> Any:
    """:func:`read` of a file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise KnowledgeError("invalid", f"cannot read {path}: {error}") from None
    return read(text)


def dump(data: Any) -> str:
    """YAML text of an export mapping (keys in the format's order, Unicode kept)."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
