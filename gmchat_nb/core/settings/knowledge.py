"""The knowledge settings' checks: ``knowledge`` (recall before each turn) and ``project_id``
(the identity a project's knowledge and conversations are kept under)."""

from __future__ import annotations

from .checks import choice, invalid

__all__ = ["KNOWLEDGE_MODES", "knowledge", "optional_string"]


KNOWLEDGE_MODES: tuple[str, ...] = ("on", "off", "keyword", "hybrid")


def knowledge(key: str, value: object) -> str:
    """Recall before each turn: ``on`` (by meaning too when the ``[knowledge]`` extra is
    installed), ``off``, ``keyword`` or ``hybrid``; YAML's ``off``/``on`` read as booleans count."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return choice(KNOWLEDGE_MODES)(key, value)


def optional_string(key: str, value: object) -> str | None:
    """A non-empty string, or ``None``."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise invalid(key, value, "a string")
    return value
