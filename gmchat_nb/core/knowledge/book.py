"""One person's view of a project's knowledge: :class:`KnowledgeBook`, what every surface writes
and reads knowledge through (``Chat.knowledge``, the widget and the panel, ``gmchat knowledge``,
the HTTP routes, the eval runner).

Only people write knowledge: a book belongs to a person (``owner``), and the only way an entry
becomes ``active`` is a person's call here -- :meth:`add`, :meth:`update`, :meth:`accept` or
:meth:`import_data`. The assistant may only :meth:`suggest`, and a suggestion waits, never
recalled, until a person accepts it. Every write screens the entry's texts with the injection
scorer (a flagged entry needs ``confirm_flagged``), refuses the same content twice (naming the
entry that has it) and compiles a verified query's calls against the project, so one on a hidden
manager or an unknown field is refused when it is saved.

Over 400 lines: one class whose writes must all take the same checks in the same order (scope,
permission, compiling, screening, duplicates), each a few lines; split, a write could skip one.
"""

from __future__ import annotations

import builtins
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..guards.leaves import SEPARATOR, leaf_text
from ..guards.scorer import score_text
from ..project.project import Project
from ..store import ChatStore, KnowledgeRecord
from .checking import calls_problem
from .entries import KINDS, STATUSES, Draft, KnowledgeError
from .terms import overlap, search_terms
from .vectors import Embedder, VectorCache, embedder, to_bytes
from .yaml_io import drafts_of, export_mapping

__all__ = ["ImportReport", "KnowledgeBook", "StaleEntry"]

log = logging.getLogger(__name__)

_VECTORS = VectorCache()  # shared by every book of the process


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import stored and what it skipped as already there (``(name, existing id)``)."""

    added: builtins.list[KnowledgeRecord] = field(default_factory=list)
    skipped: builtins.list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StaleEntry:
    """A verified query that no longer compiles, and the compiler's reason."""

    id: str
    name: str
    reason: str


class KnowledgeBook:
    """``owner``'s knowledge of one project (``project_key``: :func:`~.identity.project_key`).

    ``may_share``: whether this person may write shared entries (the surface's permission says;
    locally, the person running it may). ``vectors``: the embedding model (``"auto"``: the
    packaged one when the ``[knowledge]`` extra is installed, ``None``: keywords only).
    """

    def __init__(
        self,
        store: ChatStore,
        project: Project,
        *,
        project_key: str,
        owner: str,
        may_share: bool = True,
        vectors: Embedder | Literal["auto"] | None = "auto",
        clock: Any = time.time,
    ) -> None:
        self.store = store
        self.project = project
        self.project_key = project_key
        self.owner = owner
        self.may_share = may_share
        self._vectors = vectors  # "auto": loaded when first needed (see vectors)
        self._clock = clock

    @property
    def vectors(self) -> Embedder | None:
        """The embedding model, loaded on first use: a session over a project without knowledge,
        and every turn that recalls nothing, never pays the model's load (0.4 s)."""
        if self._vectors == "auto":
            self._vectors = embedder()
        return self._vectors

    # -- reading -------------------------------------------------------------------------------

    def get(self, entry_id: str) -> KnowledgeRecord:
        """The entry, or ``KnowledgeError("not_found")`` when this person may not see it."""
        record = self.store.knowledge_entry(self.project_key, self.owner, str(entry_id))
        if record is None:
            raise KnowledgeError("not_found", f"no knowledge entry {str(entry_id)[:80]!r}")
        return record

    def list(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        status: str | Iterable[str] | None = None,
        search: str | None = None,
    ) -> builtins.list[KnowledgeRecord]:
        """The entries this person may see, oldest first, narrowed by kind, status and words."""
        kinds = _choices(kind, KINDS, "kind")
        statuses = _choices(status, STATUSES, "status")
        records = self.store.knowledge_entries(
            self.project_key, self.owner, kinds=kinds, statuses=statuses
        )
        if search:
            terms = search_terms(search)
            needle = search.casefold().strip()
            records = [
                record
                for record in records
                if needle in f"{record.name}\n{record.body}".casefold()
                or (terms and overlap(terms, f"{record.name}\n{record.body}") >= 0.5)
            ]
        return records

    # -- writing -------------------------------------------------------------------------------

    def add(
        self, draft: Draft, *, confirm_flagged: bool = False, status: str = "active"
    ) -> KnowledgeRecord:
        """Store ``draft`` as this person's (see the module for what is checked)."""
        record, vector = self._prepared(draft, confirm_flagged=confirm_flagged, status=status)
        existing = self.store.add_knowledge(record, vector)
        if existing is not None:
            raise _duplicate(existing)
        return record

    def add_verified_query(
        self,
        name: str,
        question: str,
        calls: builtins.list[dict[str, Any]],
        *,
        scope: str = "shared",
        confirm_flagged: bool = False,
    ) -> KnowledgeRecord:
        return self.add(
            Draft.verified_query(name, question, calls, scope), confirm_flagged=confirm_flagged
        )

    def add_definition(
        self, term: str, text: str, *, confirm_flagged: bool = False
    ) -> KnowledgeRecord:
        return self.add(Draft.definition(term, text), confirm_flagged=confirm_flagged)

    def add_note(self, text: str, *, confirm_flagged: bool = False) -> KnowledgeRecord:
        return self.add(Draft.note(text), confirm_flagged=confirm_flagged)

    def suggest(self, draft: Draft) -> KnowledgeRecord:
        """Queue ``draft`` as a suggestion (personal until accepted; never recalled before)."""
        suggestion = Draft(draft.kind, draft.name, draft.body, draft.calls, "personal")
        return self.add(suggestion, confirm_flagged=True, status="suggested")

    def accept(
        self, entry_id: str, *, scope: str | None = None, confirm_flagged: bool = False
    ) -> KnowledgeRecord:
        """A person accepts a suggestion: it becomes active (a verified query or a definition
        shared unless ``scope`` says personal), checked as a new entry would be."""
        record = self.get(entry_id)
        if record.status != "suggested":
            raise KnowledgeError("invalid", f"{record.name!r} is not a suggestion")
        wanted = scope or ("personal" if record.kind == "note" else "shared")
        draft = Draft(record.kind, record.name, record.body, record.calls, wanted)
        _check_scope(draft)
        stored, vector = self._prepared(draft, confirm_flagged=confirm_flagged, status="active")
        twin = self._twin(stored.content_hash, other_than=record.id)
        if twin is not None:  # checked before the suggestion goes, so a refusal keeps it
            raise _duplicate(twin)
        self.remove(record.id)
        existing = self.store.add_knowledge(stored, vector)
        if existing is not None:
            raise _duplicate(existing)
        return stored

    def update(
        self,
        entry_id: str,
        *,
        name: str | None = None,
        text: str | None = None,
        calls: builtins.list[dict[str, Any]] | None = None,
        scope: str | None = None,
        confirm_flagged: bool = False,
    ) -> KnowledgeRecord:
        """Change an entry this person may write; it is checked again as a new one would be."""
        record = self.get(entry_id)
        self._may_write(record)
        if record.kind == "verified_query":
            draft = Draft.verified_query(
                record.name if name is None else name,
                record.body if text is None else text,
                record.calls if calls is None else calls,
                scope or record.scope,
            )
        elif record.kind == "definition":
            draft = Draft.definition(
                record.name if name is None else name, record.body if text is None else text
            )
        else:
            draft = Draft.note(record.body if text is None else text)
        draft = Draft(draft.kind, draft.name, draft.body, draft.calls, scope or record.scope)
        prepared, vector = self._prepared(
            draft, confirm_flagged=confirm_flagged, status=record.status
        )
        twin = self._twin(prepared.content_hash, other_than=record.id)
        if twin is not None:
            raise _duplicate(twin)
        now = self._clock()
        changes: dict[str, Any] = {
            "name": prepared.name,
            "body": prepared.body,
            "calls": prepared.calls,
            "scope": prepared.scope,
            "content_hash": prepared.content_hash,
            "flags": prepared.flags,
            "updated_at": now,
        }
        if record.kind == "verified_query":
            changes.update(verified_by=self.owner, verified_at=now, stale_reason=None)
            if record.status == "stale":
                changes["status"] = "active"
        if not self.store.update_knowledge(
            self.project_key,
            self.owner,
            record.id,
            may_share=self.may_share,
            changes=changes,
            vector=vector,
            revector=True,
        ):
            raise KnowledgeError("not_found", f"no knowledge entry {record.id!r}")
        return self.get(record.id)

    def remove(self, entry_id: str) -> None:
        """Forget an entry: its row, its full-text entry and its vector, together."""
        record = self.get(entry_id)
        self._may_write(record)
        if not self.store.remove_knowledge(
            self.project_key, self.owner, record.id, may_share=self.may_share
        ):
            raise KnowledgeError("not_found", f"no knowledge entry {record.id!r}")

    def remove_mine(self) -> int:
        """Forget every entry this person wrote in the project (shared ones only when they may
        write shared entries); nobody else's. Returns how many."""
        return self.store.remove_owned_knowledge(
            self.project_key, self.owner, may_share=self.may_share
        )

    def import_data(self, data: Any, *, confirm_flagged: bool = False) -> ImportReport:
        """Import the YAML format's mapping (:mod:`.yaml_io` reads the text): every new entry is
        checked first and the import is all or nothing; an entry whose content is already
        stored (or earlier in the file) is skipped and reported with the id that holds it."""
        drafts = drafts_of(data)
        # what is stored already is skipped before it is checked: importing your own export
        # changes nothing, even when it holds an entry a person confirmed as flagged
        holder = {
            content: twin.id
            for content, twin in self.store.knowledge_with_hashes(
                self.project_key, self.owner, (draft.hash for draft in drafts)
            ).items()
        }
        fresh: dict[str, tuple[KnowledgeRecord, bytes | None]] = {}
        for draft in drafts:
            if draft.hash in holder or draft.hash in fresh:
                continue
            try:
                fresh[draft.hash] = self._prepared(draft, confirm_flagged=confirm_flagged)
            except KnowledgeError as error:
                raise KnowledgeError(
                    error.code, f"{draft.kind} {draft.name!r}: {error.message}"
                ) from None
        twins = self.store.add_knowledge_many(list(fresh.values()))  # stored meanwhile: skipped
        late = {twin.content_hash for twin in twins}
        holder.update((twin.content_hash, twin.id) for twin in twins)
        added = [record for content, (record, _) in fresh.items() if content not in late]
        report: builtins.list[tuple[str, str]] = []
        for draft in drafts:
            record = fresh.get(draft.hash, (None, None))[0]
            if record is not None and draft.hash not in holder:
                holder[draft.hash] = record.id  # this copy is the one stored; later ones skip
                continue
            report.append((draft.name, holder[draft.hash]))
        return ImportReport(added, report)

    def export_data(self, *, status: str = "active") -> dict[str, Any]:
        """This person's view of the project's knowledge in the import format."""
        return export_mapping(self.list(status=status))

    # -- the schema -----------------------------------------------------------------------------

    def check(self) -> builtins.list[StaleEntry]:
        """Compile every verified query this person sees against the current schema: one that
        no longer compiles is marked stale (never recalled), one that compiles again is active
        again. Returns the stale ones with the compiler's reason."""
        stale: builtins.list[StaleEntry] = []
        hidden = self.project.index.hidden_names
        for record in self.store.knowledge_entries(
            self.project_key, self.owner, kinds=["verified_query"], statuses=["active", "stale"]
        ):
            if any(hidden.mentioned_in(str(c["arguments"].get("manager"))) for c in record.calls):
                # this connection hides what it reads: not the schema's drift, and not this
                # session's to judge for the project's other users (recall leaves it out here)
                continue
            problem = calls_problem(self.project, record.calls)
            if problem:
                stale.append(StaleEntry(record.id, record.name, problem))
            wanted = "stale" if problem else "active"
            if wanted != record.status or (problem or None) != record.stale_reason:
                changes: dict[str, Any] = {"status": wanted, "stale_reason": problem or None}
                # (every write moves the project's version mark, which the cached vectors follow)
                # marking is not an edit: it is written whoever may edit the entry
                self.store.update_knowledge(
                    self.project_key, record.owner, record.id, may_share=True, changes=changes
                )
        return stale

    # -- helpers -------------------------------------------------------------------------------

    def _twin(self, content_hash: str, *, other_than: str) -> KnowledgeRecord | None:
        """The entry this person sees with the same content, other than ``other_than``."""
        return next(
            (
                other
                for other in self.store.knowledge_entries(self.project_key, self.owner)
                if other.content_hash == content_hash and other.id != other_than
            ),
            None,
        )

    def _may_write(self, record: KnowledgeRecord) -> None:
        if record.scope == "shared" and not self.may_share:
            raise KnowledgeError(
                "forbidden", f"{record.name!r} is shared; you may not change shared knowledge"
            )
        if record.scope == "personal" and record.owner != self.owner:
            raise KnowledgeError("not_found", f"no knowledge entry {record.id!r}")

    def _prepared(
        self, draft: Draft, *, confirm_flagged: bool, status: str = "active"
    ) -> tuple[KnowledgeRecord, bytes | None]:
        if status != "suggested":  # a suggestion is its owner's until accepted, whatever kind
            _check_scope(draft, status)
        if draft.scope == "shared" and not self.may_share and status != "suggested":
            raise KnowledgeError("forbidden", "you may not write shared knowledge")
        if draft.kind == "verified_query":
            problem = calls_problem(self.project, draft.calls)
            if problem:
                raise KnowledgeError("not_compiling", problem)
        flags = screen(draft)
        if flags and not confirm_flagged:
            raise KnowledgeError(
                "flagged",
                f"this entry looks written to instruct a model ({', '.join(flags)}); "
                "save it again confirming it if that is what you mean",
            )
        now = self._clock()
        verified = draft.kind == "verified_query" and status == "active"
        record = KnowledgeRecord(
            id=f"k-{uuid.uuid4().hex[:16]}",
            project=self.project_key,
            owner=self.owner,
            kind=draft.kind,
            scope=draft.scope,
            status=status,
            name=draft.name,
            body=draft.body,
            calls=draft.calls,
            content_hash=draft.hash,
            created_by=self.owner,
            created_at=now,
            updated_at=now,
            verified_by=self.owner if verified else None,
            verified_at=now if verified else None,
            flags=list(flags),
        )
        vector = None
        if self.vectors is not None:
            vector = to_bytes(self.vectors.embed([draft.searchable])[0])
        return record, vector

    def vector_search(
        self, text: str, *, limit: int, minimum: float
    ) -> builtins.list[tuple[str, float]]:
        """Active entries this person may see, most similar to ``text`` by meaning."""
        if self.vectors is None:
            return []
        query = self.vectors.embed([text[:4000]])[0]
        return _VECTORS.search(
            self.store,
            (self.project_key, self.owner),
            self.store.knowledge_version(self.project_key),
            lambda: self.store.knowledge_vectors(self.project_key, self.owner),
            query,
            limit=limit,
            minimum=minimum,
        )


def screen(draft: Draft) -> tuple[str, ...]:
    """The scorer's reasons against any text of the entry (its name, text and call values)."""
    reasons: builtins.list[str] = []
    texts = [draft.name, draft.body, *leaf_text(draft.calls).split(SEPARATOR)]
    for text in texts:
        for reason in score_text(text):
            if reason not in reasons:
                reasons.append(reason)
    return tuple(reasons)


def _check_scope(draft: Draft, status: str = "active") -> None:
    if draft.kind == "note" and draft.scope != "personal":
        raise KnowledgeError("invalid", "a note is personal")
    # a suggestion stays its suggester's until a person accepts it, whatever its kind
    if draft.kind == "definition" and draft.scope != "shared" and status != "suggested":
        raise KnowledgeError("invalid", "a definition is shared with the project")


def _duplicate(existing: KnowledgeRecord) -> KnowledgeError:
    return KnowledgeError(
        "duplicate",
        f"the same {existing.kind.replace('_', ' ')} is already stored as {existing.name!r} "
        f"({existing.id})",
        existing=existing.id,
    )


def _choices(
    value: str | Iterable[str] | None, allowed: tuple[str, ...], what: str
) -> builtins.list[str] | None:
    if value is None:
        return None
    chosen = [value] if isinstance(value, str) else list(value)
    for item in chosen:
        if item not in allowed:
            raise KnowledgeError("invalid", f"{what} must be one of {', '.join(allowed)}")
    return chosen
