"""The widget's **Export as notebook** (``export_notebook``, answered ``notebook_exported``, see
:mod:`.protocol`): the kernel writes the chat's current conversation with
:meth:`Chat.to_notebook <gmchat_nb.Chat.to_notebook>` into its working directory (where a
notebook's kernel runs: beside the notebook), named after the conversation's title by
:func:`~gmchat_nb.chat_export.notebook_filename` (the name the server's notebook route gives it
too, so the side panel writes the same name).

An existing file is never written over: the first of ``Title.ipynb``, ``Title 1.ipynb``,
``Title 2.ipynb`` … that does not exist is taken (``to_notebook`` creates the file exclusively,
so a file that appears meanwhile moves the export on to the next name).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..chat import Chat

__all__ = ["EXPORT_TYPE", "MAX_NUMBERED", "export_answer", "numbered_name"]

log = logging.getLogger(__name__)

EXPORT_TYPE: Final = "export_notebook"
MAX_NUMBERED: Final = 1000
_MAX_REQUEST_ID: Final = 100


def numbered_name(name: str, number: int) -> str:
    """``name`` numbered: ``Title.ipynb`` for 0, ``Title 1.ipynb``, ``Title 2.ipynb`` … after
    (the front end's ``numberedName``)."""
    if number <= 0:
        return name
    stem, dot, suffix = name.rpartition(".")
    return f"{stem} {number}.{suffix}" if dot and stem else f"{name} {number}"


async def export_answer(
    chat: Chat, message: Mapping[str, Any], directory: Path | None = None
) -> dict[str, Any]:
    """The ``notebook_exported`` message answering ``message``: the ``path`` written in
    ``directory`` (default: the kernel's working directory), or ``error`` {code, message}:
    the exporter's ``not_found`` (no conversation yet) and ``empty`` (no finished turn), or
    ``exists`` (every numbered name taken), ``not_written`` (the folder cannot be written),
    ``failed`` (anything else, logged)."""
    # (nbformat and the exporter load on the first export, as with Chat.to_notebook)
    from ..chat_export import ExportError

    request = message.get("request")
    answer: dict[str, Any] = {
        "type": "notebook_exported",
        "request": request[:_MAX_REQUEST_ID] if isinstance(request, str) else None,
    }
    try:
        answer["path"] = str(await _export(chat, directory or Path.cwd()))
    except (ExportError, _Refused) as refused:
        answer["error"] = {"code": refused.code, "message": refused.message}
    except Exception as error:  # a comm handler must answer, never raise
        log.exception("the widget's notebook export failed")
        answer["error"] = {
            "code": "failed",
            "message": f"The export failed: {type(error).__name__}: {error}"[:300],
        }
    return answer


class _Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


async def _export(chat: Chat, directory: Path) -> Path:
    from ..chat_export import notebook_filename

    session = await chat.session()
    conversation_id = session.conversation_id
    record = session.store.conversation(conversation_id) if conversation_id else None
    name = notebook_filename(record.title if record is not None else "")
    for number in range(MAX_NUMBERED):
        path = directory / numbered_name(name, number)
        if path.exists():
            continue
        try:
            chat.to_notebook(path)  # (refuses a conversation that is not there or not finished)
        except FileExistsError:  # written meanwhile: the next name
            continue
        except OSError as error:
            raise _Refused(
                "not_written", f"Could not write {path}: {error.strerror or error}"
            ) from None
        return path
    raise _Refused(
        "exists",
        f"{numbered_name(name, 1)} to {numbered_name(name, MAX_NUMBERED - 1)} all exist in "
        f"{directory}: rename or move some of them.",
    )
