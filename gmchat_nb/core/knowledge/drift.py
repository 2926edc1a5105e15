"""Schema drift: a project's verified queries compiled again when it connects.

A verified query saved against yesterday's schema may name a field that was renamed since. The
first session over a connected project (per store and person) compiles every verified query it
sees (:meth:`~.book.KnowledgeBook.check`): one that no longer compiles is marked stale and never
recalled until it is fixed; one that compiles again is active again. ``gmchat knowledge check``
does the same on demand and lists the stale ones with the compiler's did-you-mean.
"""

from __future__ import annotations

import logging
import threading
import weakref

from ..project.project import Project
from .book import KnowledgeBook, StaleEntry

__all__ = ["check_on_connect"]

log = logging.getLogger(__name__)

_checked: weakref.WeakKeyDictionary[Project, set[tuple[str, str, str]]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def check_on_connect(book: KnowledgeBook) -> list[StaleEntry]:
    """:meth:`KnowledgeBook.check` once per connected project, store and person; a store that
    cannot answer now is left for the next session (logged, never a failed session)."""
    key = (book.store.path, book.project_key, book.owner)
    with _lock:
        done = _checked.setdefault(book.project, set())
        if key in done:
            return []
        done.add(key)
    try:
        stale = book.check()
    except Exception:  # the store may be away; the next session checks again
        with _lock:
            done.discard(key)
        log.warning("knowledge: verified queries could not be checked now", exc_info=True)
        return []
    for entry in stale:
        log.warning("knowledge: verified query %r is stale: %s", entry.name, entry.reason)
    return stale
