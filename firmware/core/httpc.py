"""A tiny async HTTP client for the calls the body makes: nudges, TTS, and the microphone's stream.

Stdlib asyncio streams only, so it runs on MicroPython (no urequests needed)
and on CPython. HTTP/1.0 with Connection: close keeps the answer unchunked.
`Upload` sends a body of unknown length as HTTP/1.1 chunks while it is being
made (the microphone's audio, as the person speaks); its answer is read the
same way.
"""

import asyncio
import json


class HttpError(Exception):
    pass


def split_url(url):
    """(host, port, path) of an http:// URL."""
    if not url.startswith("http://"):
        raise HttpError("only http:// URLs are supported: " + url)
    rest = url[7:]
    slash = rest.find("/")
    hostport, path = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    host, port = hostport, 80
    if ":" in hostport:
        host, port_text = hostport.rsplit(":", 1)
        port = int(port_text)
    return host, port, path


class Response:
    def __init__(self, status, headers, reader, writer):
        self.status = status
        self.headers = headers
        self.reader = reader
        self.writer = writer

    async def read(self, n):
        return await self.reader.read(n)

    async def read_exactly(self, n):
        data = b""
        while len(data) < n:
            more = await self.reader.read(n - len(data))
            if not more:
                raise HttpError("the answer ended early")
            data += more
        return data

    async def body(self, limit=4096):
        data = b""
        while len(data) < limit:
            more = await self.reader.read(limit - len(data))
            if not more:
                break
            data += more
        return data

    async def close(self):
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except Exception:  # already gone: nothing left to tidy
            pass


async def post_json(url, payload, token=None):
    """POST `payload` as JSON; returns an open Response (call .close())."""
    host, port, path = split_url(url)
    body = json.dumps(payload).encode()
    reader, writer = await asyncio.open_connection(host, port)
    head = "POST " + path + " HTTP/1.0\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
    head += "Content-Length: " + str(len(body)) + "\r\nConnection: close\r\n"
    if token:
        head += "Authorization: Bearer " + token + "\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    return await read_response(reader, writer, host)


async def read_response(reader, writer, host):
    """The status line and headers of an answer; the body is left to read."""
    status_line = await reader.readline()
    parts = status_line.split(None, 2)
    if len(parts) < 2:
        writer.close()
        raise HttpError("no HTTP answer from " + host)
    headers = {}
    while True:
        line = await reader.readline()
        if not line or line in (b"\r\n", b"\n"):
            break
        if b":" in line:
            key, value = line.split(b":", 1)
            headers[key.strip().lower().decode()] = value.strip().decode()
    return Response(int(parts[1]), headers, reader, writer)


async def send_json(url, payload, token=None):
    """POST and read a short answer: (status, body bytes)."""
    response = await post_json(url, payload, token)
    try:
        return response.status, await response.body()
    finally:
        await response.close()


class Upload:
    """POST a body in chunks as it is made: `await send(data)` each piece, then `await finish()` for the answer."""

    def __init__(self, url, content_type, token=None, headers=None):
        self.url = url
        self.content_type = content_type
        self.token = token
        self.headers = headers or {}
        self.reader = self.writer = None
        self.host = None
        self.sent = 0

    async def open(self):
        host, port, path = split_url(self.url)
        self.host = host
        self.reader, self.writer = await asyncio.open_connection(host, port)
        head = "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: " + self.content_type + "\r\n"
        head += "Transfer-Encoding: chunked\r\nConnection: close\r\n"
        if self.token:
            head += "Authorization: Bearer " + self.token + "\r\n"
        for key in self.headers:
            head += key + ": " + self.headers[key] + "\r\n"
        self.writer.write(head.encode() + b"\r\n")
        await self.writer.drain()

    async def send(self, data):
        if not data:
            return
        self.writer.write(b"%x\r\n" % len(data))
        self.writer.write(data)
        self.writer.write(b"\r\n")
        self.sent += len(data)
        await self.writer.drain()

    async def finish(self):
        """The last (empty) chunk, then the answer's Response (call .close())."""
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()
        return await read_response(self.reader, self.writer, self.host)

    async def abandon(self):
        if self.writer is not None:
            await Response(0, {}, self.reader, self.writer).close()
