"""From heard words to spoken answer: the soul through converse, each sentence to the body's /speak.

The words go to the soul's `POST /v1/chat/completions` (streamed, through the
openai SDK, as any voice stack asks) as the person's words, with OpenAI's
`metadata.heard_by` naming the body that heard them. As the answer streams in it
is cut into sentences by the one sentence rule (soulstack.protocol.sentences:
the soul's first words end where these do, and no piece is longer than a
`/speak` takes), and each goes to that body's Body Protocol `/speak` as soon
as it is complete: the first sentence plays while the soul is still
writing the rest. A body whose speech queue is full (503) is asked again until
it has room. When the soul cannot be reached or the body refuses, the failure
is logged, counted and reported to the soul as a nudge where it can be.
"""

import asyncio
import contextlib
import logging
import time

import aiohttp

from soulstack.ears import phrases
from soulstack.protocol.nudges import new_nudge_id
from soulstack.protocol.sentences import split_sentences

log = logging.getLogger(__name__)

SPEAK_RETRY_S = 0.2
SPEAK_WAIT_S = 60  # how long a sentence waits for room in the body's speech queue


class Soul:
    """The soul's converse and nudge endpoints (its one server, default http://127.0.0.1:9202)."""

    def __init__(self, url: str, token: str | None):
        from openai import AsyncOpenAI

        self.url = url.rstrip("/")
        self.token = token
        self.client = AsyncOpenAI(base_url=self.url + "/v1", api_key=token or "none", max_retries=0, timeout=120)

    async def answer(self, words: str, body_name: str):
        """The soul's answer to `words`, as it streams (text pieces)."""
        stream = await self.client.chat.completions.create(
            model="soul",
            messages=[{"role": "user", "content": words}],
            stream=True,
            metadata={"heard_by": body_name},
        )
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    yield choice.delta.content

    async def nudge(self, session: aiohttp.ClientSession, reason: str, nudge_id: str | None = None) -> bool:
        """True when the soul took the nudge. It carries a `nudge_id` (a fresh one unless given), so a caller
        that sends it again after a lost answer passes the same id and the soul counts it once."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        nudge = {"reason": reason, "nudge_id": nudge_id or new_nudge_id()}
        try:
            async with session.post(self.url + "/nudge", json=nudge, headers=headers) as response:
                if response.status < 300:
                    return True
                log.warning("the soul refused a nudge: %s %s", response.status, (await response.text())[:200])
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            log.warning("the soul could not be nudged at %s: %s", self.url, error)
        return False

    async def close(self):
        await self.client.close()


class Body:
    """One body's /speak and /express, as `--body NAME=URL` named it."""

    def __init__(self, name: str, url: str, token: str | None):
        self.name = name
        self.url = url.rstrip("/")
        self.token = token

    def headers(self):
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def speak(self, session: aiohttp.ClientSession, text: str):
        """Queue `text` on the body; waits while its queue is full; raises OSError when it refuses."""
        deadline = time.monotonic() + SPEAK_WAIT_S
        while True:
            try:
                async with session.post(self.url + "/speak", json={"text": text}, headers=self.headers()) as response:
                    if response.status < 300:
                        return
                    answer = (await response.text())[:200]
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                raise OSError(f"{self.name} at {self.url} could not be reached: {error}") from None
            if response.status != 503 or time.monotonic() > deadline:
                raise OSError(f"{self.name} refused /speak: {response.status} {answer}")
            await asyncio.sleep(SPEAK_RETRY_S)

    async def express(self, session: aiohttp.ClientSession, emotion: str):
        try:
            async with session.post(self.url + "/express", json={"emotion": emotion}, headers=self.headers()):
                pass
        except (aiohttp.ClientError, asyncio.TimeoutError):
            pass  # only a face: the log has the failure that led here


async def converse(
    soul: Soul, body: Body, session: aiohttp.ClientSession, words: str, stats: dict, times=None, language="en"
):
    """Ask the soul, speak its answer sentence by sentence; failures are logged, counted and told.
    `times` gets the wall-clock moments the first sentence was complete and the body took it."""
    times = {} if times is None else times
    spoken = 0
    try:
        async with contextlib.aclosing(_sentences(soul.answer(words, body.name))) as answer:
            async for sentence in answer:
                times.setdefault("first_sentence", time.time())
                await body.speak(session, sentence)
                times.setdefault("first_spoken", time.time())
                spoken += 1
        stats["answered"] += 1
    except OSError as error:
        stats["failed"] += 1
        log.warning("the answer to %s could not be spoken: %s", body.name, error)
        await soul.nudge(session, phrases.told(language, "unspoken", body=body.name, error=error))
    except Exception as error:  # the soul unreachable or refusing: the openai SDK's errors
        stats["failed"] += 1
        log.warning("the soul did not answer %r from %s: %s", words, body.name, error)
        await body.express(session, "doubtful")
    return spoken


async def _sentences(pieces):
    """Each sentence of a streamed text as soon as it is complete, then what is left when it ends."""
    rest = ""
    async with contextlib.aclosing(pieces):  # closed early (the body refused): the soul's stream is closed too
        async for piece in pieces:
            ready, rest = split_sentences(rest + piece, final=False)
            for sentence in ready:
                yield sentence
    for sentence in split_sentences(rest, final=True)[0]:
        yield sentence
