"""The two ways in: HTTP (microdot) over Wi-Fi, and framed lines over the USB serial line.

Both hand requests to the same core Dispatcher and carry back its (status, body).
"""

import asyncio
import json
import sys

from core import b64json, protocol, serial_frames
from core.b64json import ImageBody

JSON = "application/json"


# --- HTTP -----------------------------------------------------------------------


def http_app(dispatcher):
    from microdot import Microdot, Response

    app = Microdot()

    def answer(status, body):
        if isinstance(body, ImageBody):
            # A sync generator: microdot writes each piece as it comes, never the whole answer at once.
            return Response(b64json.pieces(body), status, {"Content-Type": JSON})
        return Response(json.dumps(body), status, {"Content-Type": JSON})

    @app.post("/<endpoint>")
    async def endpoint(request, endpoint):
        status, body = dispatcher.handle(endpoint, request.body, request.headers.get("Authorization"))
        return answer(status, body)

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
    """Framed requests in on stdin, replies and nudges out on stdout (the USB cable on the device)."""

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

    async def lines(self):
        """Yield-free line reader: returns an object with `async readline()`."""
        if sys.implementation.name == "micropython":
            return asyncio.StreamReader(self.stdin)
        loop = asyncio.get_event_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.stdin)
        return reader

    async def serve(self):
        reader = await self.lines()
        while True:
            line = await reader.readline()
            if not line:
                await asyncio.sleep(0.2)  # the cable went away; keep listening
                continue
            frame = serial_frames.decode(line)
            if not serial_frames.is_request(frame):
                continue  # noise, a malformed frame, or our own echo
            try:
                self.answer(frame)
            except Exception as failure:
                # One bad frame must not stop the line; say what happened to the asker.
                self.write(serial_frames.reply(frame.get("id"), 500, {"message": "the device failed: " + str(failure)}))
