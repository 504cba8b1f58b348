"""The two ways in: HTTP (microdot) over Wi-Fi, and framed lines over the USB serial line.

Both hand requests to the same core Dispatcher and carry back its (status, body).
"""

import asyncio
import gc
import json
import sys

from core import b64json, protocol, serial_frames
from core.b64json import ImageBody
from core.log import log

JSON = "application/json"


# --- HTTP -----------------------------------------------------------------------


# A request (its line, headers and body) must arrive in full within this many seconds;
# a half-sent one is answered and closed instead of holding a connection open for good.
REQUEST_WITHIN_S = 5


class Arriving:
    """A connection's reader while its request arrives: every read must end by one deadline.

    Microdot reads the request through this (Arriving.serve wraps each connection).
    A read that runs past the deadline, or a negative Content-Length, ends the
    request early: the read returns b"" and `problem` says why, which the route
    answers with instead of the half-read request.
    """

    def __init__(self, reader, seconds=REQUEST_WITHIN_S):
        self.reader = reader
        self.seconds = seconds
        self.left_s = seconds
        self.problem = None

    async def _within(self, read):
        if self.problem:
            return b""
        started = _now_s()
        try:
            return await asyncio.wait_for(read, self.left_s)
        except asyncio.TimeoutError:
            self.problem = (408, "the request did not arrive in full within " + str(self.seconds) + " s")
            return b""
        finally:
            self.left_s = max(0.001, self.left_s - (_now_s() - started))

    async def readline(self):
        return await self._within(self.reader.readline())

    async def read(self, n=-1):
        return await self._within(self.reader.read(n))

    async def readexactly(self, n):
        if n < 0:
            self.problem = (400, "Content-Length must be a size in bytes, not " + str(n))
            return b""
        return await self._within(self.reader.readexactly(n))


def _now_s():
    import time

    if hasattr(time, "ticks_ms"):
        return time.ticks_ms() / 1000  # wraps after days; one request's few seconds never straddle it
    return time.monotonic()


def http_app(dispatcher, request_within_s=REQUEST_WITHIN_S):
    from microdot import Microdot, Response

    class App(Microdot):
        async def handle_request(self, reader, writer):
            await super().handle_request(Arriving(reader, request_within_s), writer)

    app = App()

    def answer(status, body):
        if isinstance(body, ImageBody):
            # A sync generator: microdot writes each piece as it comes, never the whole answer at once.
            return Response(b64json.pieces(body), status, {"Content-Type": JSON})
        return Response(json.dumps(body), status, {"Content-Type": JSON})

    @app.post("/<endpoint>")
    async def endpoint(request, endpoint):
        problem = request.sock[0].problem
        if problem:
            return answer(problem[0], {"message": problem[1]})
        status, body = dispatcher.handle(endpoint, request.body, request.headers.get("Authorization"))
        return answer(status, body)

    @app.errorhandler(400)
    async def malformed(request):
        return answer(400, {"message": "the request is not well-formed HTTP, or its first line did not arrive in time"})

    @app.errorhandler(404)
    async def not_found(request):
        return answer(404, {"message": "no such endpoint; this body has POST " + protocol.endpoint_list()})

    @app.errorhandler(405)
    async def wrong_method(request):
        return answer(405, {"message": "use POST with a JSON body"})

    @app.errorhandler(413)
    async def too_large(request):
        return answer(413, {"message": "the request body is too large"})

    return app


# --- serial ---------------------------------------------------------------------


class SerialLink:
    """Framed requests in on stdin, replies and nudges out on stdout (the USB cable on the device).

    A line is read in pieces of at most PIECE bytes and held only up to
    serial_frames.MAX_LINE_BYTES: a longer one is answered 413 from its first bytes.
    Running out of memory drops the frame at hand (answered 503 when its id is
    known), is logged, and the link keeps serving.
    """

    PIECE = 512

    def __init__(self, dispatcher, stdin=None, stdout=None):
        self.dispatcher = dispatcher
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self._raw = getattr(self.stdout, "buffer", None)

    def write(self, text):
        """Write one whole line; called from one task at a time, so lines never interleave."""
        self._write_bytes(text.encode())

    def _write_bytes(self, data):
        if self._raw is not None:
            self._raw.write(data)
        else:
            self.stdout.write(data.decode())
        flush = getattr(self._raw if self._raw is not None else self.stdout, "flush", None)
        if flush:
            flush()

    def answer(self, frame):
        frame_id = frame.get("id")
        body = frame.get("body")
        status, answer = self.dispatcher.handle(frame["ep"], body if body is not None else {}, trusted=True)
        if isinstance(answer, ImageBody):
            self._write_bytes(serial_frames.reply_head(frame_id, status).encode())
            for piece in b64json.pieces(answer):
                self._write_bytes(piece)
            self._write_bytes(serial_frames.REPLY_TAIL.encode())
        else:
            self.write(serial_frames.reply(frame_id, status, answer))

    async def pieces(self):
        """An async function returning the next bytes from the cable (at most PIECE), b"" when it is gone."""
        if sys.implementation.name == "micropython":
            # MicroPython's stream read(n) waits for all n bytes, and its readline() for the whole
            # line however long. So: wait (without blocking the loop) for one byte, then take the
            # rest with readline(limit), which stops at a newline or the limit.
            stdin = getattr(self.stdin, "buffer", self.stdin)
            reader = asyncio.StreamReader(stdin)

            async def piece():
                first = await reader.read(1)
                if not first or first == b"\n":
                    return first
                return first + stdin.readline(self.PIECE - 1)

            return piece
        loop = asyncio.get_event_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.stdin)
        return lambda: reader.read(self.PIECE)

    async def serve(self):
        piece = await self.pieces()
        lines = self.lines()
        while True:
            try:
                data = await piece()
                if not data:
                    await asyncio.sleep(0.2)  # the cable went away; keep listening
                    continue
                for line, size in lines.feed(data):
                    self.take(line, size)
            except MemoryError as failure:
                frame_id = serial_frames.peek_id(lines.head)
                lines = self.lines()  # drop whatever part of a frame it held
                gc.collect()
                log("serial: out of memory reading a frame; dropped it:", failure)
                self.out_of_memory(frame_id, "reading")

    def lines(self):
        return serial_frames.Lines(limit_of=serial_frames.line_limit)

    def out_of_memory(self, frame_id, doing):
        """Tell the asker its frame was dropped for want of memory (503: it may work again later)."""
        if frame_id is not None:
            message = "the robot ran out of memory " + doing + " this request; try again, or a shorter one"
            self.write(serial_frames.reply(frame_id, 503, {"message": message}))

    def take(self, line, size):
        """Handle one line: `size` is None for a whole line, else the size of one cut at its head."""
        if size is not None:
            refusal = serial_frames.too_long(line, size)
            log("serial: a", size, "byte line is over its limit;", "answered 413" if refusal else "dropped")
            if refusal:
                self.write(refusal)
            return
        frame = None
        try:
            frame = serial_frames.decode(line)
            if not serial_frames.is_request(frame):
                return  # noise, a malformed frame, or our own echo
            self.answer(frame)
        except MemoryError as failure:
            frame_id = frame.get("id") if isinstance(frame, dict) else serial_frames.peek_id(line[:serial_frames.HEAD_BYTES])
            line = frame = None
            gc.collect()
            log("serial: out of memory answering a frame:", failure)
            self.out_of_memory(frame_id, "answering")
        except Exception as failure:
            # One bad frame must not stop the line; say what happened to the asker.
            frame_id = frame.get("id") if isinstance(frame, dict) else None
            self.write(serial_frames.reply(frame_id, 500, {"message": "the device failed: " + str(failure)}))
