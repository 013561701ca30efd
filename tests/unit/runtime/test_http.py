"""The HTTP/1.1 pool against a real local server (asyncio's, speaking raw HTTP): connections
kept and reused, bodies by length or in chunks, and every way an answer can go wrong."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

import pytest

from gangway_runtime.http import HttpError, Pool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
Serve = Callable[[Handler], Awaitable["Server"]]


def answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def request_head(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


async def reply_once(
    reply: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Take one request, send ``reply``; the server closes the connection after."""
    await request_head(reader)
    writer.write(reply)
    await writer.drain()


async def read(pool: Pool) -> bytes:
    response = await pool.request("GET", "/")
    return await response.read()


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.url = ""
        self.heads: list[bytes] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> Server:
        server = Server(handler)
        listening = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        servers.append(listening)
        server.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
        return server

    yield start
    for listening in servers:
        listening.close()


async def test_answers_come_back_whole_over_one_kept_connection(serve: Serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await request_head(reader)
            server.heads.append(head)
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.startswith(b"Content-Length")
                ),
                0,
            )
            body = await reader.readexactly(length)
            writer.write(answer(b"you sent " + body))
            await writer.drain()

    server = await serve(handler)
    pool = Pool(server.url, limit=2)
    for i in range(3):
        response = await pool.request(
            "POST",
            "/apis/x",
            query=[("a", "b c")],
            headers={"Accept": "application/json"},
            body=b"%d" % i,
        )
        assert response.status == 200
        assert await response.read() == b"you sent %d" % i
    assert server.connections == 1, "kept open and reused"
    assert server.heads[0].startswith(b"POST /apis/x?a=b+c HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:" in server.heads[0]
    await pool.close()


async def test_a_chunked_body_arrives_as_it_is_sent(serve: Serve) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await request_head(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for part in (b'{"a":1}\n', b'{"b":2}\n'):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    server = await serve(handler)
    pool = Pool(server.url)
    response = await pool.request("GET", "/watch", read_timeout=5)
    assert b"".join([chunk async for chunk in response.chunks()]) == b'{"a":1}\n{"b":2}\n'
    await pool.close()


async def test_a_connection_the_server_closed_is_not_used_again(serve: Serve) -> None:
    # Keep-alive said, then closed: a server's idle timeout.
    server = await serve(partial(reply_once, answer(b"once")))
    pool = Pool(server.url, limit=1)
    for _ in range(2):
        assert await read(pool) == b"once"
        await asyncio.sleep(0.05)  # the close arrives while the connection is idle
    assert server.connections == 2


@pytest.mark.parametrize(
    "reply",
    [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", b"SSH-2.0-OpenSSH\r\n\r\n"],
    ids=["closed mid-answer", "not HTTP"],
)
async def test_an_answer_cut_short_or_not_http_is_a_connection_error(
    serve: Serve, reply: bytes
) -> None:
    server = await serve(partial(reply_once, reply))
    pool = Pool(server.url, limit=1)
    for _ in range(2):  # the slot came back: the second is not left waiting for it
        async with asyncio.timeout(5):
            with pytest.raises(HttpError):
                await read(pool)


async def test_a_request_given_up_on_frees_its_slot_and_drops_its_connection(
    serve: Serve,
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if server.connections == 1:
            await reader.read()  # never answers; done when the client hangs up
        else:
            await reply_once(answer(b"ok"), reader, writer)

    server = await serve(handler)
    pool = Pool(server.url, limit=1)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await pool.request("GET", "/slow")
    async with asyncio.timeout(5):
        assert await read(pool) == b"ok"
    assert server.connections == 2, "the unanswered connection is not reused"


async def test_connection_refused_is_a_connection_error() -> None:
    listening = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    listening.close()
    await listening.wait_closed()
    with pytest.raises(ConnectionRefusedError):
        await Pool(f"http://127.0.0.1:{port}").request("GET", "/")


async def test_a_header_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        await Pool("http://127.0.0.1:1").request("GET", "/", headers={"X": "a\r\nEvil: 1"})
