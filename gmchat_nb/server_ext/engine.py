"""The turn engine's own event loop, in a thread of the Jupyter server process.

Everything a chat request does beyond HTTP — opening sessions, reading and writing the SQLite
store, compiling and running queries against an in-process project, a rule-based provider's
reasoning, encoding large results as JSON — runs here, never on the server's event loop. Jupyter's
loop then only parses requests and writes frames, so ``/api/status``, kernels and every other
client stay responsive while a chat request works (GeneralManager's and our earlier design ran
the turn on the server's loop: one 1 MiB question stalled the whole server for 48 s).

One loop in one thread serves every turn: graphql-core, SQLite and the project's HTTP session
are bound to it, and turns still interleave at every ``await`` exactly as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["Engine"]

T = TypeVar("T")


class Engine:
    """A daemon thread running one asyncio loop; other threads submit work to it."""

    def __init__(self, name: str = "gmchat-engine") -> None:
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), name=name, daemon=True)
        self._thread.start()
        started.wait()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(started.set)
        self.loop.run_forever()

    @property
    def running(self) -> bool:
        """True until :meth:`stop`."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def in_engine(self) -> bool:
        """True when called from the engine's own thread."""
        return threading.current_thread() is self._thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the engine; cancelling the future cancels the task."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` on the engine from another loop (cancellation is passed on)."""
        if self.in_engine():
            return await coroutine
        return await asyncio.wrap_future(self.submit(coroutine))

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a plain function on the engine's thread and await its result."""

        async def wrapped() -> T:
            return function(*args)

        return await self.run(wrapped())

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop once its pending callbacks ran, join the thread, close the loop."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):  # already closed
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()
