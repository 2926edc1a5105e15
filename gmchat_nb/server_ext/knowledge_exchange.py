"""The knowledge routes that move entries in and out: **Save as verified query** on a finished
turn (``POST {url}knowledge/from-turn``), ``GET {url}knowledge/export`` (the YAML
``import`` reads; ``?as_eval=true``: the active verified queries as a GeneralManager-format eval
dataset), ``POST {url}knowledge/import`` (YAML, all or nothing; its own size limit,
``c.GMChat.max_import_bytes``, as an export may hold many entries), ``POST {url}knowledge/check``
(every verified query compiled against today's schema), and ``PUT
{url}conversations/{id}/knowledge`` (recall switched for one conversation). What they share with
the other knowledge routes -- the caller's book, the permission to write shared entries, the
error body -- is :class:`~.knowledge.KnowledgeHandler`.
"""

from __future__ import annotations

from typing import Any, Final

from tornado import web

from ..core.knowledge import Draft, KnowledgeBook, KnowledgeError, entry_json
from ..core.knowledge.as_eval import as_eval_yaml
from ..core.knowledge.from_turn import turn_calls
from ..core.knowledge.yaml_io import dump
from .handlers import UNKNOWN_CONVERSATION, allow
from .knowledge import KnowledgeHandler
from .knowledge_requests import conversation_mode, from_turn_request, read_import, true_or_false
from .requests import Refused

__all__ = [
    "ConversationKnowledgeHandler",
    "KnowledgeCheckHandler",
    "KnowledgeExportHandler",
    "KnowledgeFromTurnHandler",
    "KnowledgeImportHandler",
]

UNKNOWN_TURN: Final = "No turn with that id in this conversation."
YAML_TYPE: Final = "application/yaml; charset=utf-8"


class KnowledgeFromTurnHandler(KnowledgeHandler):
    """``POST {url}knowledge/from-turn``: **Save as verified query** on a finished turn."""

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """``{"conversation_id", "turn_id", "name", "question"?, "scope"?, "confirm_flagged"?}``
        -> 201 the verified query: the turn's answering queries (and chart) from its journal;
        the question defaults to what the turn was asked."""
        self.check_permission()
        try:
            asked = from_turn_request(self.body())
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        actor_id = self.actor.id

        def work(book: KnowledgeBook) -> dict[str, Any]:
            store = book.store
            record = store.conversation(asked.conversation_id)
            if record is None or record.actor_id != actor_id:
                raise KnowledgeError("not_found", UNKNOWN_CONVERSATION)
            turn = next(
                (t for t in store.conversation_turns(record.id) if t.turn_id == asked.turn_id),
                None,
            )
            if turn is None:
                raise KnowledgeError("not_found", UNKNOWN_TURN)
            if turn.state != "done":
                raise KnowledgeError(
                    "invalid", f"that turn is {turn.state}: only a turn that finished is saved"
                )
            calls = turn_calls(store.events(record.id, turn_id=turn.turn_id))
            question = asked.question if asked.question is not None else turn.text
            if question is None:
                raise KnowledgeError(
                    "invalid", "the store kept no question for that turn: send 'question'"
                )
            draft = Draft.verified_query(asked.name, question, calls, asked.scope)
            return entry_json(book.add(draft, confirm_flagged=asked.confirm_flagged))

        await self.respond(work, writes=True, status=201)


class KnowledgeExportHandler(KnowledgeHandler):
    """``GET {url}knowledge/export``: the YAML the import reads (``?as_eval=true``: the active
    verified queries as a GeneralManager-format eval dataset)."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        self.check_permission()
        try:
            as_eval = true_or_false(self.parameters("as_eval"), "as_eval")
        except KnowledgeError as error:
            return self.fail(error)

        def work(book: KnowledgeBook) -> str:
            if as_eval:
                return as_eval_yaml(book.list(kind="verified_query", status="active"))
            return dump(book.export_data())

        try:
            text = await self.in_book(work)
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        self.set_header("Content-Disposition", 'inline; filename="knowledge.yaml"')
        self.finish(text, set_content_type=YAML_TYPE)


class KnowledgeImportHandler(KnowledgeHandler):
    """``POST {url}knowledge/import``: YAML text (or ``{"yaml": TEXT}``), all or nothing."""

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """-> ``{"added": [entry, ...], "skipped": [{"name", "existing"}, ...]}``."""
        self.check_permission()
        raw = self.request.body or b""
        try:
            if len(raw) > self.max_import_bytes:
                raise Refused(
                    413,
                    "invalid",
                    f"The import is {len(raw)} bytes; the limit is {self.max_import_bytes}.",
                )
            confirm = true_or_false(self.parameters("confirm_flagged"), "confirm_flagged")
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)

        def work(book: KnowledgeBook) -> dict[str, Any]:
            data, confirm_flagged = read_import(raw, confirm)  # YAML is read on the engine
            report = book.import_data(data, confirm_flagged=confirm_flagged)
            return {
                "added": [entry_json(record) for record in report.added],
                "skipped": [{"name": name, "existing": id_} for name, id_ in report.skipped],
            }

        await self.respond(work, writes=True)


class KnowledgeCheckHandler(KnowledgeHandler):
    """``POST {url}knowledge/check``: compile every verified query against today's schema."""

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """-> ``{"stale": [{"id", "name", "reason"}, ...]}`` (a body, if any, is not read)."""
        self.check_permission()

        def work(book: KnowledgeBook) -> dict[str, Any]:
            stale = book.check()
            return {"stale": [{"id": s.id, "name": s.name, "reason": s.reason} for s in stale]}

        await self.respond(work, writes=False)


class ConversationKnowledgeHandler(KnowledgeHandler):
    """``PUT {url}conversations/{id}/knowledge``: switch recall for one conversation."""

    @web.authenticated
    @allow("write")
    async def put(self, conversation_id: str) -> None:
        """``{"mode": "on"|"off"|"keyword"|"hybrid"|null}`` -> ``{"mode"}`` (null: as the
        ``knowledge`` setting says)."""
        self.check_permission()
        try:
            mode = conversation_mode(self.body())
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        actor_id = self.actor.id

        def switch() -> None:
            store = self.runtime.store
            record = store.conversation(conversation_id)
            if record is None or record.actor_id != actor_id:
                raise KnowledgeError("not_found", UNKNOWN_CONVERSATION)
            store.set_conversation_knowledge(record.id, mode)

        try:
            await self.runtime.on_engine(switch)
        except KnowledgeError as error:
            return self.fail(error)
        self.answer(200, {"mode": mode})
