"""The final query's filters: conditions and located values as Django-style filter paths."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...project.tools import TOOLS
from .conversation import Call, is_probe
from .locating import best_match, probe_value, probed_value
from .prose import manager_noun, path_text
from .reading import Reading
from .words import REFERENCE_WORDS, Token

__all__ = ["build_filters"]


def build_filters(
    row: str,
    reading: Reading,
    locate: list[Call],
    paths: dict[str, list[str] | None],
    previous: tuple[str, dict[str, Any]] | None,
    tokens: Sequence[Token],
) -> tuple[dict[str, Any], str | None]:
    """The final query's filters, or the problem that stops the query.

    ``previous`` is the last turn's row manager and filters, kept when the question (``tokens``)
    refers back to that answer ("which of them").
    """
    filters: dict[str, Any] = {}
    if (
        previous is not None
        and previous[0] == row
        and any(token.lower in REFERENCE_WORDS for token in tokens)
    ):
        filters.update(previous[1])  # "which of them": keep the last answer's rows
    for condition in reading.conditions:
        route = paths.get(condition.manager)
        if route is None:
            return {}, (
                f"I could not find how {row} relates to {condition.manager}, so I cannot "
                f"filter {manager_noun(row, 2)} by {condition.manager}.{condition.field}."
            )
        key = "__".join([*route, condition.field])
        if condition.lookup != "exact":
            key += f"__{condition.lookup}"
        filters[key] = condition.value
    probes = [c for c in locate if c.name == TOOLS.query.name and is_probe(c.args)]
    for phrase in reading.phrases:
        match = best_match(phrase, probes, paths)
        if match is None:
            places = [
                f"{c.args.get('manager')}.{next(iter(c.args.get('fields') or ['?']))}"
                for c in probes
                if probed_value(c) == probe_value(phrase)
            ]
            where = f" (I looked in {', '.join(places)})" if places else ""
            return {}, (
                f'I found nothing called "{phrase}" in the project{where}, so I cannot answer '
                "that. Check the spelling, or say what kind of thing it is."
            )
        key, value = match
        if key.endswith("__icontains"):
            if key in filters and filters[key] != value:
                return {}, (
                    f'I can look for only one of "{filters[key]}" and "{value}" in '
                    f"{path_text(key)} at a time; ask about each separately."
                )
            filters[key] = value
            continue
        # Several exact values for one field ("Germany or Sweden"): any of them.
        base = key.removesuffix("__in")
        values = list(value) if isinstance(value, list) else [value]
        known = ([filters.pop(base)] if base in filters else []) + filters.pop(f"{base}__in", [])
        merged = list(dict.fromkeys([*known, *values]))
        if len(merged) == 1 and not key.endswith("__in"):
            filters[base] = merged[0]
        else:
            filters[f"{base}__in"] = merged
    return filters, None
