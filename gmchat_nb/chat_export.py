"""A conversation as a notebook, for every surface: ``Chat.to_notebook``, ``gmchat export`` and
``GET {url}conversations/{id}/notebook`` (see docs/export.md).

The notebook itself is :mod:`gmchat_nb.core.export`'s, built from the store alone (the
conversation's journal, turns and confirmations; never the live project). What the surfaces
share is here: the conversation must be the caller's (another user's looks like an unknown one,
as on every route), a file is never written over unless asked, and a conversation's title
becomes a file name that is safe anywhere::

    notebook = chat.to_notebook("steel parts.ipynb")   # refuses to replace an existing file
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .core.export import ExportError, conversation_notebook, notebook_text
from .core.settings import ChatSettings
from .core.turns import ChatStore

if TYPE_CHECKING:
    from nbformat import NotebookNode

__all__ = [
    "UNKNOWN_CONVERSATION",
    "ExportError",
    "export_conversation",
    "notebook_filename",
    "write_notebook",
]

UNKNOWN_CONVERSATION: Final = "No conversation with that id belongs to you."
MAX_STEM: Final = 80  # characters of a title kept in a file name
FALLBACK_STEM: Final = "conversation"
NEW_FILE_MODE: Final = 0o644
# What never goes into a file name: path separators, quotes, the characters Windows reserves,
# and control characters (C0, DEL, C1).
_UNSAFE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f/\\\"'`<>:|?*]")


def export_conversation(
    store: ChatStore,
    conversation_id: str,
    *,
    actor_id: str,
    settings: ChatSettings,
    execute_hint: bool = False,
) -> NotebookNode:
    """The notebook of ``conversation_id`` when it is ``actor_id``'s; :class:`ExportError`
    ``not_found`` otherwise (an unknown and a foreign id alike), and whatever the exporter
    refuses (``empty``: no finished turn yet). ``execute_hint``: it is about to be run and saved
    with its outputs (its title cell says so)."""
    record = store.conversation(conversation_id)
    if record is None or record.actor_id != actor_id:
        raise ExportError("not_found", UNKNOWN_CONVERSATION)
    return conversation_notebook(
        store, conversation_id, settings=settings, execute_hint=execute_hint
    )


def notebook_filename(title: str) -> str:
    """``<title>.ipynb`` as a single file name that is safe on every system and in a
    ``Content-Disposition`` header: no path separator, quote, reserved or control character,
    no invisible formatting character (a right-to-left override could disguise the name),
    whitespace collapsed, at most :data:`MAX_STEM` characters, never empty or hidden."""
    text = unicodedata.normalize("NFC", title)
    text = "".join(" " if unicodedata.category(c) == "Cf" else c for c in _UNSAFE.sub(" ", text))
    stem = " ".join(text.split()).strip(" .")[:MAX_STEM].rstrip(" .")
    return f"{stem or FALLBACK_STEM}.ipynb"


def write_notebook(notebook: NotebookNode, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``notebook`` to ``path`` (UTF-8, nbformat's JSON) and return the path.

    An existing file is a :class:`FileExistsError` unless ``overwrite``: the check and the
    creation are one system call, so two exports never both think the name was free. With
    ``overwrite`` the notebook is written beside the file and moved over it, so a reader (or a
    crash) never sees half a notebook."""
    target = Path(path).expanduser()
    text = notebook_text(notebook)
    if not overwrite:
        try:
            with target.open("x", encoding="utf-8") as file:
                file.write(text)
        except FileExistsError:
            raise FileExistsError(
                f"{target} exists; choose another name or ask to overwrite it"
            ) from None
        return target
    handle, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        # (mkstemp's file is the owner's alone: keep the replaced file's mode, else the usual)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else NEW_FILE_MODE
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
