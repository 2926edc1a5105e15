"""What the knowledge routes read from a request, decoded once and refused precisely.

Every refusal here is a :class:`~gmchat_nb.core.knowledge.KnowledgeError` with the code
``invalid`` (HTTP 400) and a message naming the field and what is wrong with it: a field of the
wrong type, a lone surrogate anywhere in the body (a key or a value deep in a call's arguments),
a field another kind of entry takes, a query parameter the route does not take or given twice.
Bodies that are not JSON objects, too large or nested too deep are refused before this, by
:func:`~.requests.decode_object` (its :class:`~.requests.Refused`, with the code ``invalid``).

An import's YAML is read with :func:`read_import`: aliases (``*name``, the way a few lines of
YAML become gigabytes once walked) and nesting deeper than any entry needs are refused before
the document is built, by reading its events, which takes no recursion.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..core.knowledge import KINDS, Draft, KnowledgeError
from ..core.knowledge.yaml_io import read
from ..core.settings.knowledge import KNOWLEDGE_MODES
from ..core.text import json_kind, lone_surrogate_at
from .requests import not_a_parameter

__all__ = [
    "FromTurn",
    "conversation_mode",
    "create_draft",
    "flag",
    "from_turn_request",
    "patch_changes",
    "query_values",
    "read_import",
    "sentence",
]

# What each kind of entry takes in a POST or a PATCH (besides ``kind`` and ``confirm_flagged``).
FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "verified_query": ("name", "question", "calls", "scope"),
    "definition": ("term", "name", "text", "scope"),
    "note": ("text", "scope"),
}
STRING_FIELDS: Final = ("name", "question", "term", "text", "scope")
REQUIRED: Final[dict[str, tuple[str, ...]]] = {
    "verified_query": ("name", "question", "calls"),
    "definition": ("term", "text"),
    "note": ("text",),
}


def invalid(message: str) -> KnowledgeError:
    return KnowledgeError("invalid", message)


def sentence(message: str) -> str:
    """A core message as the HTTP error's sentence: ending with a full stop, and capitalised
    when it begins with a plain word (``notes[1]:`` and ``verified_query`` keep their spelling)."""
    text = message.strip()
    if not text:
        return "The request was refused."
    if text.split(maxsplit=1)[0].rstrip(":,").isalpha():
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def check_unicode(value: Any, where: str = "") -> None:
    """Refuse a lone surrogate in any string or key of ``value`` (already bounded in depth by
    the decoder), naming where it is (``'calls[0].arguments.filters.name'``, and ``where`` the
    document when it is not the body): stored, it would be text no reader can encode."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            position = lone_surrogate_at(item)
            if position is not None:
                place = f"'{path}'" if path else "the body"
                raise invalid(
                    f"{place}{where} has a lone surrogate (U+{ord(item[position]):04X}) at "
                    f"character {position}, which is not valid Unicode; send valid UTF-8 text"
                )
        elif isinstance(item, Mapping):
            for key, child in item.items():
                name = str(key)
                position = lone_surrogate_at(name)
                if position is not None:
                    place = f"a key in '{path}'" if path else "a key"
                    raise invalid(
                        f"{place}{where} has a lone surrogate (U+{ord(name[position]):04X}), "
                        "which is not valid Unicode; send valid UTF-8 text"
                    )
                stack.append((child, f"{path}.{name}" if path else name))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def flag(payload: Mapping[str, Any], key: str = "confirm_flagged") -> bool:
    """An optional true/false field (absent or null: false)."""
    value = payload.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid(f"'{key}' must be true or false, not {json_kind(value)}")
    return value


def _string(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"'{key}' must be a string, not {json_kind(value)}")
    return value


def _fields(payload: Mapping[str, Any], kind: str, *, extra: tuple[str, ...]) -> dict[str, Any]:
    """The fields of ``payload`` a ``kind`` takes, type-checked; a field with a value that the
    kind does not take is refused (null counts as absent)."""
    allowed = (*FIELDS[kind], *extra)
    for key, value in payload.items():
        if value is not None and key not in allowed:
            takes = ", ".join(f"'{name}'" for name in FIELDS[kind])
            raise invalid(f"a {kind.replace('_', ' ')} takes {takes}; not '{key}'")
    fields: dict[str, Any] = {
        key: _string(payload, key) for key in STRING_FIELDS if key in FIELDS[kind]
    }
    if "calls" in FIELDS[kind]:
        calls = payload.get("calls")
        if calls is not None and not isinstance(calls, list):
            raise invalid(f"'calls' must be an array of tool calls, not {json_kind(calls)}")
        fields["calls"] = calls
    if kind == "definition":
        term, name = fields.pop("term"), fields.pop("name")
        if term is not None and name is not None and term != name:
            raise invalid("a definition's 'term' and 'name' are the same thing; send one")
        fields["term"] = term if term is not None else name
    return {key: value for key, value in fields.items() if value is not None}


def _kind(payload: Mapping[str, Any]) -> str:
    kind = payload.get("kind")
    if kind is None:
        raise invalid(f"'kind' is required: one of {', '.join(KINDS)}")
    if kind not in KINDS:
        shown = repr(kind[:40]) if isinstance(kind, str) else json_kind(kind)
        raise invalid(f"'kind' must be one of {', '.join(KINDS)}, not {shown}")
    return str(kind)


def create_draft(payload: Mapping[str, Any]) -> tuple[Draft, bool]:
    """``POST {url}knowledge/``: the draft and ``confirm_flagged``."""
    check_unicode(payload)
    kind = _kind(payload)
    fields = _fields(payload, kind, extra=("kind", "confirm_flagged"))
    for key in REQUIRED[kind]:
        if key not in fields:
            raise invalid(f"'{key}' is required for a {kind.replace('_', ' ')}")
    return Draft.from_mapping(kind, fields), flag(payload)


def patch_changes(payload: Mapping[str, Any], kind: str) -> tuple[dict[str, Any], bool]:
    """``PATCH {url}knowledge/{id}`` of an entry of ``kind``: the keyword arguments of
    :meth:`~gmchat_nb.core.knowledge.KnowledgeBook.update` and ``confirm_flagged``."""
    check_unicode(payload)
    fields = _fields(payload, kind, extra=("confirm_flagged",))
    if not fields:
        takes = ", ".join(f"'{name}'" for name in FIELDS[kind])
        raise invalid(f"nothing to change: a {kind.replace('_', ' ')} takes {takes}")
    changes: dict[str, Any] = {}
    if "name" in fields or "term" in fields:
        changes["name"] = fields.get("name", fields.get("term"))
    if "question" in fields or "text" in fields:
        changes["text"] = fields.get("question", fields.get("text"))
    for key in ("calls", "scope"):
        if key in fields:
            changes[key] = fields[key]
    return changes, flag(payload)


@dataclass(frozen=True, slots=True)
class FromTurn:
    """``POST {url}knowledge/from-turn``: which turn, and how to name what it ran."""

    conversation_id: str
    turn_id: str
    name: str
    question: str | None
    scope: str
    confirm_flagged: bool


def _required(payload: Mapping[str, Any], key: str) -> str:
    value = _string(payload, key)
    if value is None or not value.strip():
        raise invalid(f"'{key}' is required")
    return value


def from_turn_request(payload: Mapping[str, Any]) -> FromTurn:
    check_unicode(payload)
    allowed = ("conversation_id", "turn_id", "name", "question", "scope", "confirm_flagged")
    unknown = [key for key, value in payload.items() if value is not None and key not in allowed]
    if unknown:
        raise invalid(
            f"saving a turn takes {', '.join(repr(k) for k in allowed)}; not {unknown[0]!r}"
        )
    return FromTurn(
        conversation_id=_required(payload, "conversation_id"),
        turn_id=_required(payload, "turn_id"),
        name=_required(payload, "name"),
        question=_string(payload, "question"),
        scope=_string(payload, "scope") or "shared",
        confirm_flagged=flag(payload),
    )


def accept_request(payload: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``POST {url}knowledge/{id}/accept``: the scope asked for (None: the kind's default) and
    ``confirm_flagged``."""
    check_unicode(payload)
    for key, value in payload.items():
        if value is not None and key not in ("scope", "confirm_flagged"):
            raise invalid(
                f"accepting a suggestion takes 'scope' and 'confirm_flagged'; not '{key}'"
            )
    return _string(payload, "scope"), flag(payload)


def conversation_mode(payload: Mapping[str, Any]) -> str | None:
    """``PUT {url}conversations/{id}/knowledge``: the recall mode (None: as the settings say)."""
    check_unicode(payload)
    if "mode" not in payload:
        raise invalid(f"'mode' is required: one of {', '.join(KNOWLEDGE_MODES)}, or null")
    for key in payload:
        if key != "mode":
            raise invalid(f"switching recall takes only 'mode'; not '{key}'")
    mode = payload["mode"]
    if mode is not None and mode not in KNOWLEDGE_MODES:
        shown = repr(mode[:40]) if isinstance(mode, str) else json_kind(mode)
        raise invalid(f"'mode' must be one of {', '.join(KNOWLEDGE_MODES)} or null, not {shown}")
    return None if mode is None else str(mode)


def query_values(arguments: Mapping[str, list[bytes]], allowed: tuple[str, ...]) -> dict[str, str]:
    """A route's query parameters: each at most once, UTF-8, one the route takes (Jupyter's
    ``?token=`` and JupyterLab's cache-buster are none: :func:`.requests.not_a_parameter`)."""
    values: dict[str, str] = {}
    for name, given in arguments.items():
        if not_a_parameter(name):
            continue
        if name not in allowed:
            takes = ", ".join(f"'{key}'" for key in allowed) or "no parameters"
            raise invalid(f"this route takes {takes}; not '{name[:40]}'")
        if len(given) != 1:
            raise invalid(f"'{name}' is given {len(given)} times; give it once")
        try:
            values[name] = given[0].decode("utf-8")
        except UnicodeDecodeError:
            raise invalid(f"'{name}' is not valid UTF-8") from None
    return values


def true_or_false(values: Mapping[str, str], key: str) -> bool:
    """A query parameter ``true`` or ``false`` (absent: false)."""
    value = values.get(key, "false")
    if value not in ("true", "false"):
        raise invalid(f"'{key}' must be true or false, not {value[:40]!r}")
    return value == "true"


def _yaml(text: str) -> Any:
    data = read(text)
    check_unicode(data, " in the YAML")
    return data


def read_import(raw: bytes, confirm_flagged: bool) -> tuple[Any, bool]:
    """An import's body: YAML text (JSON is YAML too), or a JSON object ``{"yaml": TEXT,
    "confirm_flagged"?}``; the import mapping and ``confirm_flagged`` (the body's, else the
    query parameter's)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise invalid(f"the body is not valid UTF-8 (byte {error.start})") from None
    if not text.strip():
        raise invalid("the body is empty; send the knowledge YAML")
    data = _yaml(text)
    if isinstance(data, Mapping) and "yaml" in data:
        extra = [str(key) for key in data if key not in ("yaml", "confirm_flagged")]
        if extra:
            raise invalid(
                f"an import body with 'yaml' takes only 'confirm_flagged' besides; not '{extra[0]}'"
            )
        inner = data["yaml"]
        if not isinstance(inner, str):
            raise invalid(f"'yaml' must be a string of YAML text, not {json_kind(inner)}")
        confirm_flagged = flag(data) or confirm_flagged
        data = _yaml(inner)
    return data, confirm_flagged
