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

    The bodies of `POST /firmware/file` (a piece of a new firmware file) and
    `/firmware/begin` (the new set's file list), up to 16 KB each, are not read
    by microdot: `readexactly` leaves them waiting (`body_left`), and
    core/ota.py reads them through `readinto` a small buffer at a time, under
    the same deadline. So neither is ever one allocation: a 7 KB list or a
    16 KB piece needs no 7 or 16 KB run in a fragmented heap (measured: at 256K
    a 6.5 KB body found no room).
    """

    STREAMED = (b"POST /firmware/file", b"POST /firmware/begin")

    def __init__(self, reader, seconds=REQUEST_WITHIN_S):
        self.reader = reader
        self.seconds = seconds
        self.left_s = seconds
        self.problem = None
        self.lines = 0
        self.stream_body = False
        self.body_left = 0
        self.length = 0

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
        line = await self._within(self.reader.readline())
        if not self.lines:
            for start in self.STREAMED:
                if line[: len(start)] == start:
                    self.stream_body = True
        self.lines += 1
        return line

    async def read(self, n=-1):
        return await self._within(self.reader.read(n))

    async def readexactly(self, n):
        if n < 0:
            self.problem = (400, "Content-Length must be a size in bytes, not " + str(n))
            return b""
        if self.stream_body:
            self.body_left = self.length = n  # the route reads it (readinto), straight to flash
            return b""
        return await self._within(self.reader.readexactly(n))

    async def readinto(self, view):
        """Up to len(view) bytes of a streamed body into `view`: how many, 0 once it ended (or stopped coming)."""
        want = min(len(view), self.body_left)
        if want <= 0:
            return 0
        if want < len(view):
            view = view[:want]
        if hasattr(self.reader, "readinto"):  # MicroPython's stream
            count = await self._within(self.reader.readinto(view))
        else:  # CPython's asyncio has no readinto
            data = await self._within(self.reader.read(want))
            count = len(data)
            view[:count] = data
        count = count or 0
        self.body_left -= count
        return count

    async def drain(self):
        """Read what is left of a streamed body and drop it (a refused piece): closing on unread bytes resets the answer."""
        while self.body_left > 0 and not self.problem:
            data = await self._within(self.reader.read(min(512, self.body_left)))
            if not data:
                return
            self.body_left -= len(data)


def _now_s():
    import time

    if hasattr(time, "ticks_ms"):
        return time.ticks_ms() / 1000  # wraps after days; one request's few seconds never straddle it
    return time.monotonic()


# After answering a /firmware/switch, the robot restarts into the new set this much later (the answer must leave first).
RESTART_AFTER_S = 0.3
NO_UPDATES = 'updates over Wi-Fi need a "token" in config.json; flash this robot by cable'


def http_app(dispatcher, request_within_s=REQUEST_WITHIN_S, updates=None):
    """The HTTP side: Body Protocol's four endpoints, and with `updates` (core.ota.Updates) /firmware/*."""
    from microdot import Microdot, Response

    class App(Microdot):
        async def handle_request(self, reader, writer):
            try:
                await super().handle_request(Arriving(reader, request_within_s), writer)
            except MemoryError as failure:
                # Out of memory mid-answer (a /look's next piece, say): microdot closes the connection only
                # after a whole answer or an OSError, so the asker waited for the rest until its own timeout.
                gc.collect()
                log("http: MemoryError while answering; connection closed:", failure)
                try:
                    await writer.aclose()
                except OSError:
                    pass

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
        headers = request.headers
        status, body = dispatcher.handle(
            endpoint,
            request.body,
            headers.get("Authorization"),
            content_type=headers.get("Content-Type"),
            origin=headers.get("Origin"),
        )
        return answer(status, body)

    if updates is not None:

        @app.post("/firmware/<action>")
        async def firmware(request, action):
            arriving = request.sock[0]
            if arriving.problem:
                return answer(arriving.problem[0], {"message": arriving.problem[1]})
            body = arriving if arriving.stream_body else request.body
            receiver = updates()  # core/ota.py's Updates; None without a token (see app.py)
            try:
                if receiver is None:
                    status, reply = 403, {"message": NO_UPDATES}
                else:
                    status, reply = await receiver.handle(
                        action,
                        request.headers.get("Authorization"),
                        request.headers.get("Content-Type"),
                        body,
                        request.args,
                    )
            except MemoryError:
                gc.collect()
                status, reply, receiver = (
                    503,
                    {"message": "the robot is out of memory for updates now; try again"},
                    None,
                )
            await arriving.drain()
            if arriving.problem:  # the piece stopped coming: what was written of it is gone (core/ota.py)
                return answer(arriving.problem[0], {"message": arriving.problem[1]})
            if receiver is not None and receiver.restart_requested:
                receiver.restart_requested = False
                asyncio.create_task(restart_soon())
            return answer(status, reply)

    @app.errorhandler(400)
    async def malformed(request):
        return answer(400, {"message": "the request is not well-formed HTTP, or its first line did not arrive in time"})

    @app.errorhandler(404)
    async def not_found(request):
        return answer(404, {"message": "no such endpoint; this body has POST " + protocol.endpoint_list()})

    @app.errorhandler(405)
    async def wrong_method(request):
        return answer(405, {"message": "use POST with a JSON body"})

    spill = memoryview(bytearray(1024))  # where an over-long body is read away (made once: no allocation per read)

    @app.errorhandler(413)
    async def too_large(request):
        # Over microdot's limit, the body is still coming: read it away (within the request's deadline, a small
        # piece at a time) so the answer is not lost to the reset a close on unread bytes sends.
        arriving = request.sock[0]
        arriving.body_left = request.content_length
        while await arriving.readinto(spill):
            pass
        return answer(413, {"message": "the request body is too large (" + str(request.content_length) + " bytes)"})

    return app


async def restart_soon():
    import slots

    await asyncio.sleep(RESTART_AFTER_S)
    log("restarting into the new firmware set")
    slots.restart()


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
            frame_id = (
                frame.get("id") if isinstance(frame, dict) else serial_frames.peek_id(line[: serial_frames.HEAD_BYTES])
            )
            line = frame = None
            gc.collect()
            log("serial: out of memory answering a frame:", failure)
            self.out_of_memory(frame_id, "answering")
        except Exception as failure:
            # One bad frame must not stop the line; say what happened to the asker.
            frame_id = frame.get("id") if isinstance(frame, dict) else None
            self.write(serial_frames.reply(frame_id, 500, {"message": "the device failed: " + str(failure)}))
