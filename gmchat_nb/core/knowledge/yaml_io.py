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
# libyaml's safe dumper when PyYAML was built with it (several times faster on a large
# export), else PyYAML's own: the same documents either way. Reading stays with PyYAML's own
# loader, whose errors are the ones named here (libyaml refuses a lone surrogate's escape as
# bad YAML, where the import names the entry that holds it).
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


MAX_DEPTH = 32  # an entry nests a few levels (calls, arguments, filters); more is not knowledge


def _guard(text: str) -> None:
    """Refuse aliases (``*name``: a few lines of YAML that become gigabytes once walked) and
    nesting deeper than :data:`MAX_DEPTH`, by the parser's events (it keeps a stack of states
    rather than recursing, so any depth is read safely); syntax errors are :func:`read`'s."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise KnowledgeError(
                    "invalid",
                    f"knowledge YAML may not use aliases (*{event.anchor}); write each entry out",
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise KnowledgeError(
                        "invalid", f"knowledge YAML nests more than {MAX_DEPTH} levels deep"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return


def read(text: str) -> Any:
    """The mapping a YAML text holds (``KnowledgeError("invalid")`` for text that is not YAML,
    or that uses aliases or nests too deep)."""
    if len(text) > MAX_BYTES:
        raise KnowledgeError("invalid", f"knowledge YAML is larger than {MAX_BYTES} bytes")
    _guard(text)
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
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=100)


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
        items = data.get(section)
        if items is None:  # `notes:` with nothing under it
            items = []
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
