"""A tiny async HTTP client for the calls the body makes: nudges, TTS, and the microphone's stream.

Stdlib asyncio streams only, so it runs on MicroPython (no urequests needed)
and on CPython. HTTP/1.0 with Connection: close keeps the answer unchunked.
`Upload` sends a body of unknown length as HTTP/1.1 chunks while it is being
made (the microphone's audio, as the person speaks); its answer is read the
same way.

Answers are read in small pieces (PIECE): MicroPython's stream read(n) asks the
heap for n bytes at once whatever arrives, and a running 256K body's heap was
fragmented: measured, its largest free block was under 2 KB with 45 KB free, so
one 4 KB read failed with MemoryError (docs/firmware.md, "Memory"). It keeps
its room in one run now (core/heap.py collects every 4 KB), but a small read
still costs nothing and fails nowhere.
"""

import asyncio
import json

PIECE = 256  # bytes asked of the heap per read of an answer


class HttpError(Exception):
    pass


class Unreadable(HttpError):
    """The request went out whole, but its answer could not be read (for the robot's own reason, its heap):
    the server may well have acted on it. `status` is the answer's, when its status line was read."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


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

    async def readinto(self, buffer):
        """Read into `buffer` (made once: nothing is allocated per read); the number of bytes read, 0 at the end."""
        readinto = getattr(self.reader, "readinto", None)  # MicroPython's streams have it, CPython's do not
        if readinto is not None:
            return await readinto(buffer) or 0
        data = await self.reader.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    async def read_exactly(self, n):
        data = b""
        while len(data) < n:
            more = await self.reader.read(n - len(data))
            if not more:
                raise HttpError("the answer ended early")
            data += more
        return data

    async def body(self, limit=4096):
        """The rest of the answer, up to `limit` bytes, read PIECE at a time."""
        data = b""
        while len(data) < limit:
            more = await self.reader.read(min(PIECE, limit - len(data)))
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


async def _send_request(url, payload, token):
    """Open a connection and send `payload` as a JSON POST, whole; (reader, writer, host)."""
    host, port, path = split_url(url)
    body = json.dumps(payload).encode()
    reader, writer = await asyncio.open_connection(host, port)
    head = "POST " + path + " HTTP/1.0\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
    head += "Content-Length: " + str(len(body)) + "\r\nConnection: close\r\n"
    if token:
        head += "Authorization: Bearer " + token + "\r\n"
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    return reader, writer, host


async def post_json(url, payload, token=None):
    """POST `payload` as JSON; returns an open Response (call .close())."""
    reader, writer, host = await _send_request(url, payload, token)
    return await read_response(reader, writer, host)


async def post_status(url, payload, token=None):
    """POST `payload` as JSON and return only the answer's status: nothing more of it is read.

    Raises Unreadable when the request went out whole but the status line could not be read for a
    reason of the robot's own (its heap): the server may have acted on it, so it must not be sent again.
    """
    reader, writer, host = await _send_request(url, payload, token)
    try:
        try:
            status_line = await reader.readline()
        except MemoryError as problem:
            raise Unreadable("sent, but its answer could not be read: MemoryError " + str(problem))
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise HttpError("no HTTP answer from " + host)
        return int(parts[1])
    finally:
        await Response(0, {}, reader, writer).close()


async def read_response(reader, writer, host):
    """The status line and headers of an answer; the body is left to read."""
    status_line = await reader.readline()
    parts = status_line.split(None, 2)
    if len(parts) < 2:
        writer.close()
        raise HttpError("no HTTP answer from " + host)
    status = int(parts[1])
    headers = {}
    while True:
        try:
            line = await reader.readline()
        except MemoryError as problem:  # a header longer than the heap can hold: the status is known all the same
            writer.close()
            raise Unreadable("answered " + str(status) + ", but its headers could not be read: " + str(problem), status)
        if not line or line in (b"\r\n", b"\n"):
            break
        if b":" in line:
            key, value = line.split(b":", 1)
            headers[key.strip().lower().decode()] = value.strip().decode()
    return Response(status, headers, reader, writer)


class Upload:
    """POST a body in chunks as it is made: `await send(data)` each piece, `await end()`, then `await response()`."""

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

    async def end(self):
        """The last (empty) chunk: once it is out, the server has the whole body."""
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def response(self):
        """The answer's Response, after end() (call .close())."""
        return await read_response(self.reader, self.writer, self.host)

    async def abandon(self):
        if self.writer is not None:
            await Response(0, {}, self.reader, self.writer).close()
