"""Manager name resolution: which managers ``exposed`` names, and every spelling that finds an
exposed manager (``Part``, ``part``, ``PartManager``, ``PartType``, ``partList``, ``parts``)."""

from __future__ import annotations

from collections.abc import Iterable

from .manager_info import ManagerInfo
from .names import did_you_mean, normalize_key, singular, split_words, suggestion_hint

__all__ = ["UnknownExposedManagerError", "aliases", "name_variants", "resolve_exposed"]


class UnknownExposedManagerError(ValueError):
    """``exposed`` named a manager the schema does not have."""


def resolve_exposed(exposed: Iterable[str], type_to_manager: dict[str, str]) -> frozenset[str]:
    """The manager names ``exposed`` means (any accepted spelling, or one bare string); a name
    of no manager is an :class:`UnknownExposedManagerError` with close matches."""
    if isinstance(exposed, str):
        exposed = [exposed]
    by_key: dict[str, str] = {}
    for type_name, manager in type_to_manager.items():
        for key in (manager, manager + "Manager", type_name):
            by_key[normalize_key(key)] = manager
    chosen: set[str] = set()
    for name in exposed:
        found = by_key.get(normalize_key(name))
        if found is None:
            suggestions = did_you_mean(name, sorted(type_to_manager.values()))
            hint = suggestion_hint(suggestions)
            raise UnknownExposedManagerError(
                f"exposed names '{name}', which is not a manager of this schema.{hint}"
            )
        chosen.add(found)
    return frozenset(chosen)


def aliases(managers: Iterable[ManagerInfo]) -> dict[str, str]:
    """Normalized key -> manager name, for the manager's name, type, roots and joined words;
    the first manager to claim a key keeps it."""
    found: dict[str, str] = {}
    for info in managers:
        keys = [info.name, info.type_name, *(root.name for root in info.roots)]
        words = split_words(info.name)
        keys.append("".join(words))
        for key in keys:
            found.setdefault(normalize_key(key), info.name)
    return found


def name_variants(key: str) -> list[str]:
    """``partmanagers`` -> [partmanagers, partmanager, part]; strips Manager/Type/List suffixes."""
    variants = [key, singular(key)]
    for suffix in ("manager", "managers", "type", "types", "list", "page", "set"):
        for item in list(variants):
            if item.endswith(suffix) and len(item) > len(suffix):
                stem = item[: -len(suffix)]
                variants.extend([stem, singular(stem)])
    if key.endswith("es"):
        variants.append(key[:-2])
    return list(dict.fromkeys(variants))
