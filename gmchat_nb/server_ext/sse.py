"""``POST {url}stream/``: one turn as server-sent events.

Each event is one ``data: <json>\\n\\n`` frame, flushed as soon as the session yields it (one
TCP write per event). During silences longer than ``keepalive_seconds`` a ``: keepalive\\n\\n``
comment keeps proxies from closing the idle connection. A confirm-listed mutation ends the stream
at ``confirm_mutation``; ``POST {url}confirm/`` finishes the turn.
"""

from __future__ import annotations

import json

from tornado import web
from tornado.iostream import StreamClosedError

from ..core.events import ChatEvent
from .handlers import GMChatHandler, allow
from .sessions import ChatRuntime

__all__ = ["StreamHandler", "sse_frame"]

KEEPALIVE = b": keepalive\n\n"


def sse_frame(event: ChatEvent) -> bytes:
    """One event as an SSE frame (compact JSON: a frame never contains a newline)."""
    return b"data: " + json.dumps(event.to_dict(), default=str).encode() + b"\n\n"


class StreamHandler(GMChatHandler):
    """Streams a turn's events; a client that disconnects cancels the turn."""

    keepalive_seconds: float

    def initialize(
        self, runtime: ChatRuntime, max_body_bytes: int = 65536, keepalive_seconds: float = 15.0
    ) -> None:
        """Tornado passes the handler kwargs the app registered."""
        super().initialize(runtime, max_body_bytes)
        self.keepalive_seconds = keepalive_seconds

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
                    event = await run.next(self.keepalive_seconds)
                except TimeoutError:
                    self.write(KEEPALIVE)
                    await self.flush()
                    continue
                if event is None:
                    break
                self.write(sse_frame(event))
                await self.flush()
        except StreamClosedError:
            run.cancel()
            return
        self.finish(set_content_type="text/event-stream")
