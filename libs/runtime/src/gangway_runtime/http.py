"""HTTP/1.1 to one server: a bounded pool of keep-alive connections over asyncio streams
(TLS from the caller's context), answers parsed by httptools (llhttp, Node's C parser).

Why not aiohttp: importing it is 10 MiB of every service's memory, a quarter of an idle
service, for a client that sends plain requests to one API server. What is ours here is
only the pool; the protocol is llhttp's, the connections and TLS asyncio's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Final
from urllib.parse import urlencode, urlsplit

import httptools

READ_SIZE: Final = 64 << 10
USER_AGENT: Final = "User-Agent: gangway"


class HttpError(ConnectionError):
    """No usable answer: the connection failed or closed mid-answer, or the answer is not
    HTTP. A ConnectionError, so whatever retries on a lost connection retries on it."""


class _Answer:
    """httptools' callbacks: an answer's headers, its body as it comes, its end; and its
    parser, which knows whether the connection stays open only until the end comes."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers_done = False
        self.keep_alive = False
        self.complete = False
        self.body: list[bytes] = []

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @property
    def usable(self) -> bool:
        """Still open both ways: an idle connection the server closed has seen its EOF."""
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Response:
    """An answer whose headers have come; its body is read whole (:meth:`read`) or as it
    comes (:meth:`chunks`). Holds its connection until read to the end or closed."""

    def __init__(
        self,
        pool: Pool,
        connection: _Connection,
        answer: _Answer,
        read_timeout: float | None,
    ) -> None:
        self.status: int = answer.parser.get_status_code()
        self._pool = pool
        self._connection: _Connection | None = connection
        self._answer = answer
        self._read_timeout = read_timeout

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (each read waits at most the read timeout)."""
        try:
            while True:
                arrived, self._answer.body = self._answer.body, []
                for chunk in arrived:
                    yield chunk
                if self._answer.complete:
                    break
                await self._receive()
        finally:
            self.close()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def _receive(self) -> None:
        assert self._connection is not None, "read after close"
        async with asyncio.timeout(self._read_timeout):
            await _feed(self._connection, self._answer.parser)

    def close(self) -> None:
        """Give the connection back when the answer was read to its end and the server
        keeps it open, else close it (an answer half read cannot be skipped)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._answer.complete and self._answer.keep_alive:
            self._pool.release(connection)
        else:
            connection.close()
            self._pool.release(None)


async def _feed(connection: _Connection, parser: httptools.HttpResponseParser) -> None:
    data = await connection.reader.read(READ_SIZE)
    if not data:
        raise HttpError("the server closed the connection mid-answer")
    try:
        parser.feed_data(data)
    except httptools.HttpParserError as exc:
        raise HttpError(f"not an HTTP answer: {exc}") from exc


class Pool:
    """At most ``limit`` connections to the server at ``url`` (http or https), kept open
    between requests. ``tls``: the context for https; False: https without checking the
    server's certificate. ``server_name``: the name its certificate is checked against,
    when not the URL's host."""

    def __init__(
        self,
        url: str,
        tls: ssl.SSLContext | bool = True,
        *,
        server_name: str | None = None,
        limit: int = 100,
    ) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "localhost"
        https = parts.scheme == "https"
        self._port = parts.port or (443 if https else 80)
        self._authority = parts.netloc
        self._base = parts.path.rstrip("/")
        self._tls: ssl.SSLContext | None = _context(tls) if https else None
        self._server_name = (server_name or self._host) if https else None
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        read_timeout: float | None = None,
    ) -> Response:
        """Send one request and wait for its answer's headers; the caller reads the body
        (or closes the response). Cancelled or failed before that, the connection goes."""
        head = self._head(method, path, query, headers or {}, body)
        await self._slots.acquire()
        connection: _Connection | None = None
        try:
            connection = await self._connection()
            connection.writer.write(head)
            if body:
                connection.writer.write(body)
            await connection.writer.drain()
            answer = _Answer()
            while not answer.headers_done:
                async with asyncio.timeout(read_timeout):
                    await _feed(connection, answer.parser)
        except BaseException:
            if connection is not None:
                connection.close()
            self._slots.release()
            raise
        return Response(self, connection, answer, read_timeout)

    def _head(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: bytes | None,
    ) -> bytes:
        target = self._base + path + (f"?{urlencode(query)}" if query else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._authority}", USER_AGENT]
        for name, value in headers.items():
            if "\r" in value or "\n" in value:
                raise ValueError(f"header {name}: a line break would split the request")
            lines.append(f"{name}: {value}")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if connection.usable:
                return connection
            connection.close()
        reader, writer = await asyncio.open_connection(
            self._host, self._port, ssl=self._tls, server_hostname=self._server_name
        )
        return _Connection(reader, writer)

    def release(self, connection: _Connection | None) -> None:
        if connection is not None:
            self._idle.append(connection)
        self._slots.release()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        for connection in idle:
            with contextlib.suppress(OSError, ssl.SSLError):
                await connection.writer.wait_closed()


def _context(tls: ssl.SSLContext | bool) -> ssl.SSLContext:
    if isinstance(tls, ssl.SSLContext):
        return tls
    context = ssl.create_default_context()
    if not tls:  # insecure-skip-tls-verify
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
