"""A minimal HTTP/1.1 client for the benchmarks: keep-alive, Content-Length and chunked bodies,
nothing else — so that what a benchmark times is the server, not the client.

httpx spends about a millisecond of Python per request on this 2-core machine, and with 20
concurrent clients in one process it became the bottleneck of ``bench/server.py`` (33–42
turns/s measured by testers against a server that can do more). This client does one
``writer.write`` per request and parses the response with a handful of ``readuntil`` calls.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

__all__ = ["Connection", "Response"]


class Response:
    """Status, headers (lower-case names) and body of one response."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class Connection:
    """One keep-alive connection to ``host:port``; requests go one after another."""

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host = host
        self.port = port
        self.headers = headers
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> Connection:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()

    def _send(self, method: str, path: str, body: Any, extra: dict[str, str]) -> None:
        assert self._writer is not None
        data = b"" if body is None else json.dumps(body).encode()
        headers = {
            "Host": f"{self.host}:{self.port}",
            "Content-Length": str(len(data)),
            "Content-Type": "application/json",
            **self.headers,
            **extra,
        }
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        self._writer.write(head.encode() + b"\r\n" + data)

    async def _head(self) -> tuple[int, dict[str, str]]:
        assert self._reader is not None
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        return status, headers

    async def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Response:
        """Send one request and read the whole response."""
        self._send(method, path, body, headers or {})
        status, head = await self._head()
        return Response(status, head, b"".join([chunk async for chunk in self._body(head)]))

    async def first_event(self, path: str, body: Any) -> tuple[float, Response]:
        """POST a streamed turn: seconds until the first ``data:`` frame, and the response."""
        start = time.perf_counter()
        self._send("POST", path, body, {"Accept": "text/event-stream"})
        status, head = await self._head()
        first: float | None = None
        parts = []
        async for chunk in self._body(head):
            if first is None and b"data: " in chunk:
                first = time.perf_counter() - start
            parts.append(chunk)
        assert first is not None, b"".join(parts)[:300]
        return first, Response(status, head, b"".join(parts))

    async def follow(self, path: str, until: bytes) -> int:
        """GET an event stream and read it until ``until`` arrives; the bytes read. The stream
        stays open on the server's side, so the connection is spent afterwards."""
        self._send("GET", path, None, {"Accept": "text/event-stream"})
        status, head = await self._head()
        assert status == 200, status
        read, tail = 0, b""
        async for chunk in self._body(head):
            read += len(chunk)
            if until in tail + chunk:
                return read
            tail = chunk[-len(until) :]
        raise AssertionError(f"the stream ended before {until!r}")

    async def _body(self, head: dict[str, str]) -> Any:
        assert self._reader is not None
        if "content-length" in head:
            yield await self._reader.readexactly(int(head["content-length"]))
            return
        if head.get("transfer-encoding", "").lower() != "chunked":
            yield await self._reader.read()
            return
        while True:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await self._reader.readuntil(b"\r\n")
                return
            chunk = await self._reader.readexactly(size)
            await self._reader.readexactly(2)
            yield chunk
