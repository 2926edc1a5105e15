"""Shortest relation paths between exposed managers, for ``find_path``."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .index import RelationInfo, SchemaIndex

__all__ = ["RelationPath", "shortest_path"]


@dataclass(frozen=True, slots=True)
class RelationPath:
    """The relations walked from one manager to another, in order."""

    source: str
    target: str
    hops: tuple[tuple[str, RelationInfo], ...]  # (manager the hop starts at, relation)

    @property
    def selection(self) -> list[str]:
        """The GraphQL selection names, ``items`` wrappers included."""
        return [name for _, relation in self.hops for name in relation.path]

    def field_tree(self, leaf_fields: list[str]) -> list[object]:
        """A ``query`` ``fields`` value that walks the path and selects ``leaf_fields``."""
        tree: list[object] = list(leaf_fields)
        for _, relation in reversed(self.hops):
            tree = [{relation.name: tree}]
        return tree


def shortest_path(index: SchemaIndex, source: str, target: str) -> RelationPath | None:
    """Breadth-first over relations in schema order, so ties resolve the same way every time."""
    if source == target:
        return RelationPath(source, target, ())
    previous: dict[str, tuple[str, RelationInfo]] = {}
    queue = deque([source])
    seen = {source}
    while queue:
        current = queue.popleft()
        for relation in index.managers[current].relations:
            if relation.target in seen:
                continue
            seen.add(relation.target)
            previous[relation.target] = (current, relation)
            if relation.target == target:
                hops: list[tuple[str, RelationInfo]] = []
                node = target
                while node != source:
                    start, hop = previous[node]
                    hops.append((start, hop))
                    node = start
                return RelationPath(source, target, tuple(reversed(hops)))
            queue.append(relation.target)
    return None
