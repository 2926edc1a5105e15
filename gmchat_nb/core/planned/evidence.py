"""Evidence of one turn: every tool result and calculation as a record with a stable id.

Planned orchestration answers from evidence, never from what a model remembers or computes.
Each result a task obtains becomes an :class:`EvidenceRecord` whose id (``task_1:query:1``) the
synthesis cites and the calculations link to. Records hold a deep read-only copy of their JSON
payload, so nothing that happens to the tool's result afterwards can change what was cited.

Identical calls within a turn are served once: :func:`canonical_call_identity` gives the same
text for the same call whatever the order of its arguments, and :meth:`EvidenceStore.cached`
finds the record of the first such call.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

from gmchat_nb.core.project.tools import ToolEvidence
from gmchat_nb.core.text import MAX_JSON_DEPTH

__all__ = [
    "CHILD_SEPARATOR",
    "DuplicateEvidenceError",
    "EvidenceError",
    "EvidenceKind",
    "EvidenceNotFoundError",
    "EvidenceRecord",
    "EvidenceStore",
    "IncompatibleEvidenceError",
    "InvalidEvidenceError",
    "call_hash",
    "canonical_call_identity",
    "child_alias_id",
    "freeze_json",
    "thaw_json",
]

# What a tool call yields (each tool's declaration says which), or an engine calculation.
EvidenceKind = Literal[ToolEvidence, "calculation"]

CHILD_SEPARATOR = ":child:"
"""Joins a root's task id and a child's evidence id: ``task_1:child:task_1_child:query:1``."""

_KINDS: frozenset[str] = frozenset(get_args(EvidenceKind))
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class EvidenceError(ValueError):
    """Evidence was misused; the message says which record and why."""


class InvalidEvidenceError(EvidenceError):
    """A payload or provenance that is not JSON data."""


class DuplicateEvidenceError(EvidenceError):
    """An evidence id that the store already holds."""


class EvidenceNotFoundError(EvidenceError):
    """An evidence id that the store does not hold."""


class IncompatibleEvidenceError(EvidenceError):
    """A record of a kind that the requirement or calculation cannot use."""


def canonical_call_identity(name: str, args: Mapping[str, Any]) -> str:
    """One text per call, whatever the order of its arguments' keys (nested ones included).

    ``NaN`` and ``Infinity`` (which Python's JSON reader accepts from a model) are written as
    such: the identity is a cache key, and refusing it would fail the call before the tool could.
    """
    try:
        plain = {"name": name, "args": thaw_json(args)}
        return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InvalidEvidenceError(
            f"the arguments of {name!r} are not JSON data: {error}"
        ) from None


def call_hash(identity: str) -> str:
    """A short, fixed-length key for an identity (``sha256:`` and the hex digest)."""
    return "sha256:" + hashlib.sha256(identity.encode("utf-8")).hexdigest()


def child_alias_id(root_task_id: str, evidence_id: str) -> str:
    """The id under which a root task sees a child task's record."""
    return f"{root_task_id}{CHILD_SEPARATOR}{evidence_id}"


def freeze_json(value: Any, *, where: str = "payload") -> Any:
    """A deep read-only copy of JSON data: objects as ``MappingProxyType``, arrays as tuples.

    Refuses what ``json.dumps`` would refuse or write as something else (NaN and infinite floats,
    keys that are not strings, sets, other objects) and nesting deeper than
    :data:`~gmchat_nb.core.text.MAX_JSON_DEPTH`, so a record's payload always serialises and
    always reads back as what was stored. Recursion is bounded by that depth.
    """
    try:
        return _freeze(value, 0)
    except _NotJson as error:
        at = "".join(f"[{step!r}]" for step in reversed(error.steps))
        raise InvalidEvidenceError(f"{where}{at} {error.problem}") from None


class _NotJson(Exception):
    """Raised deep inside a payload; each level adds its step on the way out, so the location
    costs nothing unless something is wrong."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str | int] = []


_SCALARS = (str, int, bool, type(None))  # exact types: subclasses (enums) are converted below


def _freeze(value: Any, depth: int) -> Any:
    if type(value) in _SCALARS:
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(f"is {value!r}, which JSON cannot represent")
        return float(value)
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_JSON_DEPTH:
        raise _NotJson(f"nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, Mapping):
        return MappingProxyType(_freeze_object(value, depth))
    if isinstance(value, list | tuple):
        return _freeze_array(value, depth)
    if isinstance(value, int | str):  # an enum member would print as its name: keep the value
        return int(value) if isinstance(value, int) else str(value)
    raise _NotJson(f"is a {type(value).__name__}, which is not JSON data")


def _freeze_object(value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    frozen: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _NotJson(f"has the key {key!r}, which is not a string")
        try:
            frozen[str(key)] = _freeze(item, depth + 1)
        except _NotJson as error:
            error.steps.append(key)
            raise
    return frozen


def _freeze_array(value: list[Any] | tuple[Any, ...], depth: int) -> tuple[Any, ...]:
    frozen: list[Any] = []
    for index, item in enumerate(value):
        try:
            frozen.append(_freeze(item, depth + 1))
        except _NotJson as error:
            error.steps.append(index)
            raise
    return tuple(frozen)


def thaw_json(value: Any) -> Any:
    """A fresh plain copy (dicts and lists) of data :func:`freeze_json` made, or of plain JSON."""
    if isinstance(value, Mapping):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw_json(item) for item in value]
    return value


@dataclass(frozen=True, slots=True)
class EvidenceRecord:
    """One piece of evidence. Records a store returns hold deep read-only copies of their data."""

    evidence_id: str
    task_id: str
    kind: EvidenceKind
    payload: Any
    call_identity: str | None = None
    provenance: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)  # read-only, shared

    def payload_json(self) -> Any:
        """A fresh plain (dict/list) copy of the payload, ready for ``json.dumps``."""
        return thaw_json(self.payload)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON for the synthesis and the audit (the call identity is internal)."""
        return {
            "evidence_id": self.evidence_id,
            "task_id": self.task_id,
            "kind": self.kind,
            "payload": self.payload_json(),
            "provenance": thaw_json(self.provenance),
        }


def _frozen_record(record: EvidenceRecord) -> EvidenceRecord:
    """``record`` with its kind checked and its payload and provenance copied read-only."""
    if record.kind not in _KINDS:
        raise InvalidEvidenceError(
            f"{record.evidence_id} has the kind {record.kind!r}; kinds are {', '.join(sorted(_KINDS))}"
        )
    return EvidenceRecord(
        evidence_id=record.evidence_id,
        task_id=record.task_id,
        kind=record.kind,
        payload=freeze_json(record.payload, where=f"the payload of {record.evidence_id}"),
        call_identity=record.call_identity,
        provenance=_frozen_provenance(record.provenance, record.evidence_id),
    )


def _frozen_provenance(provenance: Mapping[str, Any] | None, evidence_id: str) -> Mapping[str, Any]:
    if not provenance:
        return _EMPTY
    frozen = freeze_json(provenance, where=f"the provenance of {evidence_id}")
    if not isinstance(frozen, Mapping):
        raise InvalidEvidenceError(f"the provenance of {evidence_id} is not a JSON object")
    return frozen


class EvidenceStore:
    """Turn-local, in memory; safe for use from one asyncio loop (no threads).

    No method awaits, so each runs to completion without another task seeing half of it.
    """

    def __init__(self) -> None:
        self._records: dict[str, EvidenceRecord] = {}
        # Each task's own records, counted for numbering (aliases are not the root's own).
        self._numbers: dict[str, int] = {}
        self._aliases: set[str] = set()
        self._by_call: dict[str, EvidenceRecord] = {}
        self._links: dict[str, list[str]] = {}

    def next_id(self, task_id: str, kind: EvidenceKind) -> str:
        """The id the task's next record of ``kind`` gets; numbering runs across kinds.

        It reserves nothing: asking twice without adding gives the same id.
        """
        number = self._numbers.get(task_id, 0) + 1
        while (candidate := f"{task_id}:{kind}:{number}") in self._records:
            number += 1  # an id someone added by hand is skipped, never reused
        return candidate

    def add(self, record: EvidenceRecord, *, requirement_id: str | None = None) -> EvidenceRecord:
        """Store a copy of ``record`` (payload checked and frozen) and return that copy."""
        self._refuse_taken(record.evidence_id)
        stored = _frozen_record(record)
        self._insert(stored, requirement_id=requirement_id)
        self._numbers[stored.task_id] = self._numbers.get(stored.task_id, 0) + 1
        return stored

    def record(
        self,
        task_id: str,
        kind: EvidenceKind,
        payload: Any,
        *,
        call_identity: str | None = None,
        provenance: Mapping[str, Any] | None = None,
        requirement_id: str | None = None,
    ) -> EvidenceRecord:
        """Number, store and return a new record of ``task_id``."""
        record = EvidenceRecord(
            evidence_id=self.next_id(task_id, kind),
            task_id=task_id,
            kind=kind,
            payload=payload,
            call_identity=call_identity,
            provenance=provenance or _EMPTY,
        )
        return self.add(record, requirement_id=requirement_id)

    def alias(self, evidence_id: str, record: EvidenceRecord) -> EvidenceRecord:
        """Show a child task's ``record`` to its root under ``evidence_id``.

        ``evidence_id`` is :func:`child_alias_id` of the root's task id and the record's id; the
        alias has the root's task id, the same payload and ``alias_of`` in its provenance.
        """
        suffix = CHILD_SEPARATOR + record.evidence_id
        root = evidence_id[: -len(suffix)]
        if not evidence_id.endswith(suffix) or not root:
            raise InvalidEvidenceError(
                f"the alias {evidence_id!r} of {record.evidence_id!r} must read "
                f"'<root task id>{suffix}'"
            )
        self._refuse_taken(evidence_id)
        # A record this store returned is already frozen; anything else is checked and copied.
        stored = self._records.get(record.evidence_id) is record
        source = record if stored else _frozen_record(record)
        alias = EvidenceRecord(
            evidence_id=evidence_id,
            task_id=root,
            kind=source.kind,
            payload=source.payload,
            call_identity=source.call_identity,
            provenance=MappingProxyType({**source.provenance, "alias_of": source.evidence_id}),
        )
        self._insert(alias, requirement_id=None)
        self._aliases.add(evidence_id)
        return alias

    def get(self, evidence_id: str) -> EvidenceRecord:
        """The record with ``evidence_id``."""
        try:
            return self._records[evidence_id]
        except KeyError:
            raise EvidenceNotFoundError(f"no evidence {evidence_id!r} in this turn") from None

    def __contains__(self, evidence_id: object) -> bool:
        return evidence_id in self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[EvidenceRecord]:
        return iter(list(self._records.values()))

    def by_task(self, task_id: str) -> list[EvidenceRecord]:
        """The task's records (aliases of its children's included) in insertion order."""
        return [record for record in self._records.values() if record.task_id == task_id]

    def cached(self, call_identity: str) -> EvidenceRecord | None:
        """The first record of an identical call in this turn, if any."""
        return self._by_call.get(call_identity)

    def link(
        self, requirement_id: str, evidence_id: str, *, kinds: Collection[EvidenceKind] = ()
    ) -> None:
        """Link a record to a requirement (once; linking again changes nothing)."""
        record = self.get(evidence_id)
        if kinds and record.kind not in kinds:
            raise IncompatibleEvidenceError(
                f"{evidence_id} is {record.kind} evidence; requirement {requirement_id!r} "
                f"takes {', '.join(sorted(kinds))}"
            )
        linked = self._links.setdefault(requirement_id, [])
        if evidence_id not in linked:
            linked.append(evidence_id)

    def linked(self, requirement_id: str) -> list[EvidenceRecord]:
        """The records linked to ``requirement_id`` in the order they were linked."""
        return [self._records[evidence_id] for evidence_id in self._links.get(requirement_id, [])]

    def kind_counts(self) -> dict[str, int]:
        """Records per kind for the audit; aliases are views of records already counted."""
        counts: dict[str, int] = {}
        for evidence_id, record in self._records.items():
            if evidence_id not in self._aliases:
                counts[record.kind] = counts.get(record.kind, 0) + 1
        return counts

    def _refuse_taken(self, evidence_id: str) -> None:
        if evidence_id in self._records:
            raise DuplicateEvidenceError(f"evidence {evidence_id!r} is already recorded")

    def _insert(self, record: EvidenceRecord, *, requirement_id: str | None) -> None:
        self._records[record.evidence_id] = record
        if record.call_identity is not None:
            self._by_call.setdefault(record.call_identity, record)
        if requirement_id is not None:
            self.link(requirement_id, record.evidence_id)
