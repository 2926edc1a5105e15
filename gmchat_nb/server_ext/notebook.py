"""``GET {url}conversations/{id}/notebook``: one of the caller's conversations as a notebook.

The answer is the notebook's JSON (``application/x-ipynb+json``, nbformat 4, without outputs) as
an attachment named after the conversation's title (:func:`~gmchat_nb.chat_export.
notebook_filename`: no path separator, quote or control character; a title beyond ASCII is
also given as RFC 6266's ``filename*``). It is built from the store alone -- the journaled
queries, charts, answers and changes (see docs/export.md) -- so any server sharing the store
answers, and the project is never connected.

Only finished turns are exported (a turn still running, or waiting for a decision, is left out
and the title cell says so). Refusals, in the durable routes' envelope: ``404 bad_event`` for a
conversation that is not the caller's (exactly the events route's answer); ``409 bad_event``
when it has no finished turn to export yet; ``503 chat_error`` when the store cannot be used.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from tornado import web

from ..chat_export import ExportError, export_conversation, notebook_filename
from ..core.export import notebook_text
from .durable import DurableHandler
from .handlers import UNKNOWN_CONVERSATION, allow
from .requests import Refused

__all__ = ["ConversationNotebookHandler", "content_disposition"]

NOTEBOOK_TYPE: Final = "application/x-ipynb+json"
# The exporter's refusals as this route's answers (a code it may add later is a 409 too).
REFUSALS: Final = {"not_found": (404, "bad_event"), "empty": (409, "bad_event")}


def content_disposition(filename: str) -> str:
    """``attachment; filename="…"`` for a name :func:`notebook_filename` made safe; a name beyond
    ASCII is sent as RFC 5987 ``filename*`` too, with ``_`` for each such character in the
    plain ``filename`` that older clients read."""
    plain = "".join(c if c.isascii() and c.isprintable() else "_" for c in filename)
    header = f'attachment; filename="{plain}"'
    if plain != filename:
        header += f"; filename*=UTF-8''{quote(filename, safe='')}"
    return header


class ConversationNotebookHandler(DurableHandler):
    """``GET {url}conversations/{id}/notebook``: the conversation as a notebook (see the module)."""

    @web.authenticated
    @allow("read")
    async def get(self, conversation_id: str) -> None:
        self.check_permission()
        try:
            filename, text = await self.runtime.on_engine(
                self._notebook, conversation_id, self.actor.id
            )
        except Refused as refused:
            return self.refuse(refused)
        self.set_header("Content-Disposition", content_disposition(filename))
        self.finish(text, set_content_type=NOTEBOOK_TYPE)

    def _notebook(self, conversation_id: str, actor_id: str) -> tuple[str, str]:
        """On the engine: the file name and the notebook's text."""
        store = self.runtime.store
        try:
            notebook = export_conversation(
                store, conversation_id, actor_id=actor_id, settings=self.runtime.settings
            )
        except ExportError as error:
            status, code = REFUSALS.get(error.code, (409, "bad_event"))
            message = UNKNOWN_CONVERSATION if error.code == "not_found" else error.message
            raise Refused(status, code, message) from None
        record = store.conversation(conversation_id)
        title = record.title if record is not None else ""
        return notebook_filename(title), notebook_text(notebook)
