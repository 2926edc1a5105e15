"""``POST {url}stream/``: one turn as server-sent events.

Each event is one ``data: <json>\\n\\n`` frame, flushed as soon as the session yields it (one
TCP write per event). During silences longer than ``keepalive_seconds`` a ``: keepalive\\n\\n``
comment keeps proxies from closing the idle connection. A confirm-listed mutation ends the stream
at ``confirm_mutation``; ``POST {url}confirm/`` finishes the turn.
"""

from __future__ import annotations

from tornado import web
from tornado.iostream import StreamClosedError

from .handlers import GMChatHandler, allow
from .turn_run import Delivery

__all__ = ["StreamHandler", "sse_frame"]

KEEPALIVE = b": keepalive\n\n"


def sse_frame(delivery: Delivery) -> bytes:
    """One event as an SSE frame (its JSON never contains a newline: escaped, ASCII)."""
    return b"data: " + delivery.json.encode() + b"\n\n"


class StreamHandler(GMChatHandler):
    """Streams a turn's events; a client that disconnects cancels the turn."""

    @web.authenticated
    @allow("execute")
    async def post(self) -> None:
        """``{"text", "conversation_id"?}`` → ``text/event-stream`` (errors before it: JSON)."""
        self.check_permission()
        started = await self.begin_turn("sse")
        if started is None:
            return
        session, run = started
        self._run = run
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # nginx-style proxies would buffer otherwise
        # The stream's events do not name the conversation; a client needs it to confirm.
        self.set_header("X-GMChat-Conversation", session.conversation_id or "")
        stream = getattr(self.request.connection, "stream", None)
        if stream is not None:
            stream.set_nodelay(True)  # one small write per event: no Nagle delay
        try:
            await self.flush()  # headers now: the client knows the stream is open
            while True:
                try:
                    delivery = await run.next(self.keepalive_seconds)
                except TimeoutError:
                    self.write(KEEPALIVE)
                    await self.flush()
                    continue
                if delivery is None:
                    break
                self.write(sse_frame(delivery))
                await self.flush()
        except StreamClosedError:
            run.cancel()
            return
        self.finish(set_content_type="text/event-stream")
