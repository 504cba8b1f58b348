"""The ears server: `POST /utterance` takes a body's microphone stream, `GET /health` says how it goes.

POST /utterance  (docs/ears.md, "The stream")
  Content-Type: audio/L16; rate=16000; channels=1   (16-bit little-endian mono PCM, any length of chunks)
  X-Soulstack-Body: <the body's name, as --body NAME=URL knows it>
  X-Utterance-Id: <the body's id for this utterance>   (optional; a resend with the same id is not heard twice)
  -> 200 {"heard": "<words>", "utterance_id"}   the words go on to the soul; the answer to the body's /speak
     200 {"heard": ..., "duplicate": true}       the same utterance again (same id, or the same audio): not resent
                                                  (one that had no words gets its 422 again)
     422 {"message", "soul_told"}                sound, but no words made out; the soul was nudged
     422 {"message", "soul_told": false,         no speech at all (silence, a steady hum): no recogniser
          "speech": false}                        heard it and the soul was not told (nor may the robot tell it)
     502 {"message", "soul_told"}                the recogniser failed; the soul was nudged
     502 {"message", "soul_told", "heard"}       words heard, but the soul did not take them (down, refusing
                                                  the token, silent for SOUL_TAKES_S): they are kept as a nudge
     400/404/409/413/415 {"message"}             a bad stream, an unknown body, one already streaming, too long,
                                                  not 16 kHz mono PCM
Recognition runs while the audio arrives. One stream at a time per body: a
second while one is open is refused (409), never interleaved.
"""

import asyncio
import hashlib
import logging
import re
import time
from collections import OrderedDict

from aiohttp import web

from soulstack.cjk import chinese
from soulstack.ears.recognise import RATE, VOICED_RMS, RecogniserError, Voicing, simplified
from soulstack.ears.soul import converse
from soulstack.serving import BadRequest, background, error_response, http_health, make_server_app, read_stream

log = logging.getLogger(__name__)

MAX_SECONDS = 30
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,39}$")
UTTERANCE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
SOUL_TAKES_S = 10  # the soul answers a chat with its stream's start at once; silent this long, it did not take it
DEDUP_S = 120  # a resend comes within seconds; an id or digest is remembered this long
CHUNK = 4096
MIN_BYTES = RATE * 2 // 10  # under 0.1 s is no utterance
AUDIO_TYPE = f"Content-Type: audio/L16; rate={RATE}; channels=1"


def audio_type_problem(content_type: str) -> str | None:
    """What is wrong with an utterance's Content-Type (None: 16 kHz mono L16). Every parameter must
    agree: a rate or a channel count named twice with two values is a contradiction, not a choice."""
    kind, *params = [part.strip().lower().replace(" ", "") for part in content_type.split(";")]
    if kind != "audio/l16":
        return f"the stream is {kind or 'untyped'}, not audio/L16"
    values: dict = {}
    for param in params:
        name, _, value = param.partition("=")
        values.setdefault(name, set()).add(value)
    for name, wanted in (("rate", str(RATE)), ("channels", "1")):
        given = values.get(name, {wanted} if name == "channels" else set())
        if len(given) > 1:
            return (
                f"the Content-Type names {name} {len(given)} times with different values ({', '.join(sorted(given))})"
            )
        if given != {wanted}:
            return f"{name}={''.join(given) or 'missing'}"
    return None


class Ears:
    def __init__(self, recogniser, soul, bodies: dict, max_seconds: int = MAX_SECONDS, language: str = "en"):
        self.recogniser = recogniser
        self.language = language  # a zh soul's words are written in simplified characters
        self.warmed = None
        self.soul = soul
        self.bodies = bodies  # name -> soul.Body
        self.max_bytes = max_seconds * RATE * 2
        self.max_seconds = max_seconds
        self.streaming: set[str] = set()  # names of bodies with a stream open
        self.recent: OrderedDict[tuple, tuple] = OrderedDict()  # (body, id or digest) -> (when, words)
        self.stats = {
            "utterances": 0,
            "heard": 0,
            "no_words": 0,
            "no_speech": 0,
            "failed": 0,
            "duplicates": 0,
            "answered": 0,
        }
        self.tasks: set[asyncio.Task] = set()
        self.timeline: list[
            dict
        ] = []  # per heard utterance: wall-clock times of its stages (tools/bench-ears reads them)

    # --- dedup ---

    def remembered(self, key):
        now = time.monotonic()
        while self.recent and next(iter(self.recent.values()))[0] < now - DEDUP_S:
            self.recent.popitem(last=False)
        found = self.recent.get(key)
        return found[1] if found else None

    def remember(self, key, words):
        self.recent[key] = (time.monotonic(), words)
        while len(self.recent) > 1000:
            self.recent.popitem(last=False)

    # --- the request ---

    def check_headers(self, request):
        """(body name, utterance id) or an error response."""
        problem = audio_type_problem(request.headers.get("Content-Type", ""))
        if problem:
            return error_response(415, f"{problem}: send 16 kHz mono 16-bit PCM as {AUDIO_TYPE}")
        name = request.headers.get("X-Soulstack-Body", "")
        if not NAME.match(name):
            return error_response(400, "X-Soulstack-Body must name the body (1-40 letters, digits, space . _ -)")
        if name not in self.bodies:
            known = ", ".join(sorted(self.bodies)) or "none (start ears with --body NAME=URL)"
            return error_response(404, f"no body named {name!r} here; ears knows: {known}")
        utterance_id = request.headers.get("X-Utterance-Id")
        if utterance_id is not None and not UTTERANCE_ID.match(utterance_id):
            return error_response(400, "X-Utterance-Id must be 1-64 letters, digits, . _ -")
        return name, utterance_id

    async def utterance(self, request: web.Request) -> web.Response:
        checked = self.check_headers(request)
        if isinstance(checked, web.Response):
            return checked
        name, utterance_id = checked
        if utterance_id and self.remembered((name, utterance_id)) is not None:
            return self.duplicate(self.remembered((name, utterance_id)))
        if name in self.streaming:
            return error_response(409, f"{name} is already streaming an utterance; one at a time per body")
        self.streaming.add(name)
        try:
            return await self.hear(request, name, utterance_id)
        finally:
            self.streaming.discard(name)

    async def hear(self, request, name, utterance_id):
        """Read the stream while a second task feeds the recogniser: a recogniser slower than the
        stream never holds the robot's upload back, and the end of the stream is seen when it comes."""
        session = self.recogniser.session()
        pieces = asyncio.Queue()
        decoding = asyncio.create_task(self.decode(session, pieces))
        digest = hashlib.sha256()
        voicing = Voicing()  # the frames loud enough to be a voice: whole-utterance recognisers' own cut
        size = 0
        limit_s = self.max_seconds * 2 + 5  # real time, and slack for a slow link
        problem = None
        try:
            async for chunk in read_stream(request, max_bytes=self.max_bytes, timeout_s=limit_s, chunk=CHUNK):
                size += len(chunk)
                digest.update(chunk)
                voicing.add(chunk)
                pieces.put_nowait(chunk)
        except BadRequest as error:
            # read_stream's bounds (size, time, silence, a broken-off stream), in ears' words for the size
            too_long = f"an utterance is at most {self.max_seconds} s of 16 kHz audio"
            problem = error_response(error.status, too_long if error.status == 413 else str(error))
        ended = time.time()
        if problem is None and size < MIN_BYTES:
            problem = error_response(400, "the stream held less than 0.1 s of audio")
        if problem is None and voicing.last_voiced() < 0:
            problem = self.no_speech(name, size, voicing.loudest)
        if problem is None and self.remembered((name, digest.hexdigest())) is not None:
            problem = self.duplicate(self.remembered((name, digest.hexdigest())))
        if problem is not None:
            decoding.cancel()
            session.abandon()
            return problem
        pieces.put_nowait(None)
        key = (name, digest.hexdigest())
        self.stats["utterances"] += 1
        times = {"stream_end": ended}
        try:
            words = await decoding
        except RecogniserError as error:
            return await self.failed(name, str(error))
        if self.language != "en" and chinese(words):
            words = simplified(words)
        self.remember(key, words)
        if utterance_id:
            self.remember((name, utterance_id), words)
        if not words:
            self.stats["no_words"] += 1
            log.info("%s heard someone, but the recogniser made out no words", name)
            told = self.soul.tell("could_not_hear", body=name)
            return web.json_response(
                {"message": "I heard someone but could not make out the words", "soul_told": told}, status=422
            )
        self.stats["heard"] += 1
        times["recognised"] = time.time()
        self.timeline = (self.timeline + [times])[-100:]
        log.info("%s heard: %s", name, words)
        try:  # the body is told it was heard only once the soul has the words (it answers at once)
            async with asyncio.timeout(SOUL_TAKES_S):
                stream = await self.soul.ask(words, name)
        except Exception as error:  # the soul down, refusing the token, or silent: the openai SDK's errors
            return self.soul_missed(name, words, error)
        task = asyncio.create_task(converse(self.soul, self.bodies[name], words, self.stats, times, stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return web.json_response({"heard": words, "utterance_id": utterance_id})

    def soul_missed(self, name, words, error):
        """The answer to a heard utterance the soul did not take: a 502 the body says to the person ("I
        couldn't hear you"), and the words kept as a nudge, delivered once the soul is back."""
        self.stats["failed"] += 1
        why = str(error) or type(error).__name__  # TimeoutError says nothing of itself
        log.warning("the soul at %s did not take %r from %s: %s", self.soul.url, words, name, why)
        told = self.soul.keep_words(words)
        message = f"I heard you, but the soul at {self.soul.url} did not take the words ({why})"
        return web.json_response({"message": message, "soul_told": told, "heard": words}, status=502)

    def no_speech(self, name, size, loudest):
        """The answer to a stream in which no 30 ms frame is voiced (recognise.Voicing: louder than
        VOICED_RMS, and over the stream's own quiet): nobody spoke, so no recogniser is asked and the
        soul is not told that someone did."""
        self.stats["no_speech"] += 1
        log.info("%s sent %.1f s with no speech in it (loudest 30 ms: RMS %.0f)", name, size / 2 / RATE, loudest)
        message = (
            f"I heard no speech: nothing in the stream stood out as a voice (its loudest 30 ms: RMS {loudest:.0f} "
            f"of 32767; a voice is over {VOICED_RMS} and 8 dB over the stream's own quiet)"
        )
        return web.json_response({"message": message, "soul_told": False, "speech": False}, status=422)

    def duplicate(self, words):
        """The answer to a resend: what the first one got (the soul is not asked or told again)."""
        self.stats["duplicates"] += 1
        if not words:
            message = "I heard someone but could not make out the words"
            return web.json_response({"message": message, "soul_told": True, "duplicate": True}, status=422)
        return web.json_response({"heard": words, "duplicate": True})

    @staticmethod
    async def decode(session, pieces):
        """Feed the recogniser each piece as it comes; the words once the end (None) arrives."""
        while True:
            piece = await pieces.get()
            if piece is None:
                return await session.finish()
            await session.feed(piece)

    async def failed(self, name, why):
        self.stats["failed"] += 1
        log.warning("recognising what %s heard failed: %s", name, why)
        told = self.soul.tell("recogniser_failed", body=name, why=why)
        return web.json_response({"message": f"the recogniser failed: {why}", "soul_told": told}, status=502)

    async def health(self, request):
        about = {"recogniser": self.recogniser.name, "hearing": self.recogniser.describe(), "language": self.language}
        return web.json_response(
            {"ok": True, **about, "bodies": sorted(self.bodies), **self.stats, **http_health(request.app)}
        )

    async def warm(self):
        """Load the recogniser's model (once: the command does it before serving, the app again at start)."""
        if self.warmed is None:
            self.warmed = asyncio.ensure_future(self.recogniser.warm())
        await asyncio.shield(self.warmed)

    async def run(self):
        """For the app's lifetime: the recogniser loaded, the soul's nudges delivered."""
        telling = asyncio.create_task(self.soul.run())
        try:
            await self.warm()
            await asyncio.Event().wait()
        finally:
            telling.cancel()
            for task in list(self.tasks):
                task.cancel()
            await asyncio.gather(telling, *self.tasks, return_exceptions=True)
            for body in self.bodies.values():
                await body.close()
            await self.soul.close()


def make_ears_app(ears: Ears, token: str | None = None) -> web.Application:
    app = make_server_app(token, client_max_size=64 * 1024, how_to_lock="--token-file FILE (or $EARS_TOKEN)")
    app.router.add_post("/utterance", ears.utterance)
    app.router.add_get("/health", ears.health)
    app.cleanup_ctx.append(background(ears.run))
    return app
