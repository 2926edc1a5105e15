"""What the assistant learns from its analysts: verified queries, definitions and personal
notes, curated by people, recalled before each turn. See ``docs/knowledge.md``.

- :mod:`.entries` -- the kinds of entry, their shapes, hash and JSON;
- :mod:`.identity` -- a project's identity and a person's (one owner on every surface);
- :mod:`.book` -- :class:`KnowledgeBook`, one person's view of a project's knowledge: the one
  way every surface writes and reads it;
- :mod:`.checking` -- a verified query's calls compiled against the current schema;
- :mod:`.terms`, :mod:`.vectors`, :mod:`.recall` -- recall by words and by meaning, fused;
- :mod:`.yaml_io` -- the YAML format of import and export, and eval datasets from verified
  queries.
"""

from __future__ import annotations

from ..store import KnowledgeRecord
from .book import ImportReport, KnowledgeBook, StaleEntry
from .entries import KINDS, SCOPES, STATUSES, Draft, KnowledgeError, entry_json
from .identity import person_of, project_key
from .recall import MODES, Recalled, recall, recalled_in

__all__ = [
    "KINDS",
    "MODES",
    "SCOPES",
    "STATUSES",
    "Draft",
    "ImportReport",
    "KnowledgeBook",
    "KnowledgeError",
    "KnowledgeRecord",
    "Recalled",
    "StaleEntry",
    "entry_json",
    "person_of",
    "project_key",
    "recall",
    "recalled_in",
]
