"""The YAML of knowledge import and export (the format in ``docs/knowledge.md``).

``verified_queries`` (name, question, calls of ``{tool, arguments}``, optional ``scope``),
``definitions`` (term, text) and ``notes`` (text). Export writes what :func:`read` reads, so an
export imported again changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..store import KnowledgeRecord
from .entries import Draft, KnowledgeError

__all__ = ["drafts_of", "dump", "export_mapping", "read", "read_file"]

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


_SECTIONS = {"verified_queries": "verified_query", "definitions": "definition", "notes": "note"}


def drafts_of(data: Any) -> list[Draft]:
    """The drafts of an import mapping (``verified_queries``, ``definitions``, ``notes``)."""
    if not isinstance(data, Mapping):
        raise KnowledgeError(
            "invalid", "knowledge must be a mapping of verified_queries, definitions and notes"
        )
    unknown = [str(key) for key in data if key not in _SECTIONS]
    if unknown:
        raise KnowledgeError(
            "invalid", f"unknown section {unknown[0]!r}: use {', '.join(_SECTIONS)}"
        )
    drafts: list[Draft] = []
    for section, kind in _SECTIONS.items():
        items = data.get(section) or []
        if not isinstance(items, list):
            raise KnowledgeError("invalid", f"{section} must be a list")
        for position, item in enumerate(items, 1):
            try:
                drafts.append(Draft.from_mapping(kind, item))
            except KnowledgeError as error:
                raise KnowledgeError(
                    error.code, f"{section}[{position}]: {error.message}"
                ) from None
    return drafts


def export_mapping(records: Iterable[KnowledgeRecord]) -> dict[str, Any]:
    """Entries in the import format (an export imported again changes nothing)."""
    data: dict[str, list[dict[str, Any]]] = {section: [] for section in _SECTIONS}
    for record in records:
        if record.kind == "verified_query":
            item: dict[str, Any] = {
                "name": record.name,
                "question": record.body,
                "calls": [{"tool": c["tool"], "arguments": c["arguments"]} for c in record.calls],
            }
            if record.scope == "personal":
                item["scope"] = "personal"
            data["verified_queries"].append(item)
        elif record.kind == "definition":
            data["definitions"].append({"term": record.name, "text": record.body})
        else:
            data["notes"].append({"text": record.body})
    return {section: items for section, items in data.items() if items}
