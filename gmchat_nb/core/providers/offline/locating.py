"""Locating values: where a value phrase may be (probes) and how managers connect (paths).

A probe is a one-row ``query`` for a phrase in a text field; :func:`best_match` turns the probes'
results into the filter for that phrase, and :func:`relation_paths` reads the ``find_path``
results into relation routes from the row manager.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...project.names import singular
from ...project.tools import TOOLS
from .conversation import Call
from .schemas import relation_targets, text_filters

__all__ = [
    "PROBE_CAP",
    "Probe",
    "best_match",
    "probe_value",
    "probed_value",
    "relation_paths",
    "value_probes",
]

PROBE_CAP = 8  # value probes per question: enough for two values over the usual neighbourhood


@dataclass(frozen=True, slots=True)
class Probe:
    """Look for ``phrase`` in ``manager.field`` (one row is enough)."""

    phrase: str
    manager: str
    field: str

    def args(self) -> dict[str, Any]:
        """The ``query`` arguments of the probe."""
        return {
            "manager": self.manager,
            "fields": [self.field],
            "filters": {f"{self.field}__icontains": probe_value(self.phrase)},
            "limit": 1,
        }


def value_probes(
    phrases: list[str],
    row: str,
    others: list[str],
    schemas: dict[str, dict[str, Any]],
    hits: list[dict[str, Any]],
) -> list[Probe]:
    """Where each value may be: the row's own text fields, then its neighbours' names."""
    if not phrases:
        return []
    places: list[tuple[str, str]] = [(row, name) for name in text_filters(schemas[row])]
    summaries = {str(hit["manager"]): hit for hit in hits}
    neighbours = [target for _, target in relation_targets(schemas[row])]
    neighbours += others + list(summaries)
    for name in dict.fromkeys(neighbours):
        if name == row:
            continue
        if name in schemas:
            texts = text_filters(schemas[name])
            if texts:
                places.append((name, texts[0]))
        elif name in summaries:
            if "name" in (summaries[name].get("fields") or ()):
                places.append((name, "name"))
        else:
            places.append((name, "name"))  # unknown shape: an error result is ignored
    per_phrase = [[Probe(phrase, m, f) for m, f in places] for phrase in phrases]
    probes: list[Probe] = []
    # Round-robin, so that every value gets its most likely places before the cap.
    for depth in range(len(places)):
        for candidates in per_phrase:
            if len(probes) < PROBE_CAP:
                probes.append(candidates[depth])
    return probes


def relation_paths(
    row: str, schema: dict[str, Any], locate: list[Call]
) -> dict[str, list[str] | None]:
    """Relation names from the row manager to each other manager (None: unreachable)."""
    paths: dict[str, list[str] | None] = {row: []}
    for call in locate:
        if call.name != TOOLS.find_path.name:
            continue
        target = str(call.args.get("to_manager"))
        result = call.result if call.ok and isinstance(call.result, dict) else {}
        hops = result.get("hops")
        if result.get("path") is None or not isinstance(hops, list):
            paths[target] = None
            continue
        paths[target] = [str(hop.get("relation")) for hop in hops if isinstance(hop, dict)]
    for relation, target in relation_targets(schema):
        paths.setdefault(target, [relation])  # without find_path, direct relations still work
    return paths


def probe_value(phrase: str) -> str:
    """What a probe looks for: ``gears`` -> ``gear`` (names are singular); ``Artemis`` stays."""
    head, _, last = phrase.rpartition(" ")
    if last.isalpha() and last.islower() and singular(last) != last:
        return f"{head} {singular(last)}" if head else singular(last)
    return phrase


def probed_value(call: Call) -> str | None:
    """The value a probe looked for (None for a call with no single filter)."""
    filters = call.args.get("filters")
    if isinstance(filters, dict) and len(filters) == 1:
        return str(next(iter(filters.values())))
    return None


def best_match(
    phrase: str, probes: list[Call], paths: dict[str, list[str] | None]
) -> tuple[str, Any] | None:
    """The filter for ``phrase`` from its probes: an exact match first, else the first found."""
    value = probe_value(phrase)
    # A hit must contain the value as whole words: "weigh" is not found in "Lead Ballast Weight".
    whole_words = re.compile(rf"(?<!\w){re.escape(value)}(?:s|es)?(?!\w)", re.IGNORECASE)
    contains: tuple[str, Any] | None = None
    ambiguous: tuple[str, Any] | None = None
    for call in probes:
        if probed_value(call) != value or not call.ok or not isinstance(call.result, dict):
            continue
        data = call.result.get("data")
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            continue
        manager = str(call.args.get("manager"))
        route = paths.get(manager)
        if route is None:
            continue  # found, but not reachable from the row manager
        field_name = str((call.args.get("fields") or ["name"])[0])
        found = data[0].get(field_name)
        prefix = [*route, field_name]
        if not isinstance(found, str):
            continue
        if not whole_words.search(found):
            total = call.result.get("total_count")
            if ambiguous is None and (not isinstance(total, int) or total > 1):
                # One row is all a probe sees: "inactive" came back, but "active" may be there
                # too. Match the value itself, in the usual spellings.
                variants = [value.lower(), value.capitalize(), value.title(), value.upper(), value]
                ambiguous = ("__".join([*prefix, "in"]), list(dict.fromkeys(variants)))
            continue
        if found.casefold() in (phrase.casefold(), value.casefold()):
            return "__".join(prefix), found
        if contains is None:
            contains = ("__".join([*prefix, "icontains"]), value)
    return contains or ambiguous
