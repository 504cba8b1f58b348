"""From heard words to spoken answer: the soul through converse, each sentence to the body's /speak.

The words go to the soul's `POST /v1/chat/completions` (streamed, through the
openai SDK, as any voice stack asks) as the person's words, with OpenAI's
`metadata.heard_by` naming the body that heard them. As the answer streams in it
is cut into sentences by the one sentence rule (soulstack.protocol.sentences:
the soul's first words end where these do, and no piece is longer than a
`/speak` takes), and each goes to that body's Body Protocol `/speak` as soon
as it is complete, through the protocol kit's `BodyClient`: the first sentence
plays while the soul is still writing the rest. A body whose speech queue is
full (503) is asked again until it has room. When the soul cannot be reached or
the body refuses, the failure is logged, counted and told to the soul as a nudge
through the nudge contract's `NudgeSender`, which keeps it while the soul is
down and delivers it once the soul is back, like every other body's nudge.
What ears tells is a code (`could_not_hear`, `recogniser_failed`,
`answer_unspoken`: soulstack.protocol.nudges' CODES) beside its plain English
reason; the soul tells it to itself in its own language.
"""

import asyncio
import contextlib
import logging
import time

from soulstack.protocol.client import BodyClient, BodyError
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from soulstack.protocol.nudges import coded, plain_reason
from soulstack.protocol.sentences import split_sentences

log = logging.getLogger(__name__)

SPEAK_RETRY_S = 0.2
SPEAK_WAIT_S = 60  # how long a sentence waits for room in the body's speech queue
BODY_TIMEOUT_S = 30


class Soul:
    """The soul's converse and nudge endpoints (its one server, default http://127.0.0.1:9202)."""

    def __init__(self, url: str, token: str | None, converse_token: str | None = None):
        """`token`: the soul's nudge.token (its /nudge); `converse_token`: its converse.token (its /v1),
        when it has one of its own (the soul's default is the nudge token)."""
        from openai import AsyncOpenAI

        self.url = url.rstrip("/")
        self.token = token
        key = converse_token or token or "none"
        self.client = AsyncOpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=120)
        # Each thing ears tells is news of its own utterance: none is a repeat to collapse, none waits.
        debouncer = Debouncer(same_reason_window_s=0, min_interval_s=0)
        self.sender = NudgeSender(self.url + "/nudge", token=token, debouncer=debouncer)

    async def ask(self, words: str, body_name: str):
        """Hand the soul `words` (heard by `body_name`): its answer's stream once the soul has taken them
        (the soul answers at once with the stream's start). The openai SDK's errors when it has not."""
        return await self.client.chat.completions.create(
            model="soul",
            messages=[{"role": "user", "content": words}],
            stream=True,
            metadata={"heard_by": body_name},
        )

    async def answer(self, words: str, body_name: str, stream=None):
        """The soul's answer to `words`, as it streams (text pieces); `stream`: one `ask` opened already."""
        stream = stream if stream is not None else await self.ask(words, body_name)
        async for chunk in stream:
            for choice in chunk.choices:
                if choice.delta and choice.delta.content:
                    yield choice.delta.content

    def keep_words(self, words: str) -> bool:
        """The person's words as a nudge, when converse did not take them: kept while the soul is down and
        delivered once it is back, so they are never lost (the nudge contract's sender)."""
        return self.sender.nudge(words=words)

    def tell(self, code: str, **about: str) -> bool:
        """Tell the soul what happened, as `code` with its `about` (and the plain reason beside them);
        True once the sender holds it (it is delivered, and kept and retried while the soul is down:
        `run` does it)."""
        codes = coded(code, **about)
        return self.sender.nudge(plain_reason(codes), codes=codes)

    async def run(self):
        """Deliver the nudges until cancelled."""
        await self.sender.run()

    async def close(self):
        await self.client.close()


class Body:
    """One body, as `--body NAME=URL` named it: its name and its Body Protocol client."""

    def __init__(self, name: str, url: str, token: str | None):
        self.name = name
        self.client = BodyClient.at(url, token=token, timeout_s=BODY_TIMEOUT_S)

    async def close(self):
        await self.client.close()


async def converse(soul: Soul, body: Body, words: str, stats: dict, times=None, stream=None):
    """Ask the soul (or read `stream`, its answer opened by `Soul.ask`) and speak its answer sentence by
    sentence (a full speech queue is asked again until it has room); failures are logged, counted and
    told. `times` gets the wall-clock moments the first sentence was complete and the body took it."""
    times = {} if times is None else times
    spoken = 0
    try:
        async with contextlib.aclosing(_sentences(soul.answer(words, body.name, stream))) as answer:
            async for sentence in answer:
                times.setdefault("first_sentence", time.time())
                deadline = time.monotonic() + SPEAK_WAIT_S
                while True:
                    try:
                        await body.client.speak(sentence)
                        break
                    except BodyError as error:
                        if error.status != 503 or time.monotonic() > deadline:
                            raise
                    await asyncio.sleep(SPEAK_RETRY_S)
                times.setdefault("first_spoken", time.time())
                spoken += 1
        stats["answered"] += 1
    except BodyError as error:
        stats["failed"] += 1
        hint = "; give ears the robot's token: --body-token or $BODY_TOKEN" if error.status == 401 else ""
        log.warning("the answer to %s could not be spoken: %s%s", body.name, error, hint)
        soul.tell("answer_unspoken", body=body.name, error=str(error))
    except Exception as error:  # the soul unreachable or refusing: the openai SDK's errors
        stats["failed"] += 1
        log.warning("the soul did not answer %r from %s: %s", words, body.name, error)
        with contextlib.suppress(BodyError):  # only a face: the log has the failure that led here
            await body.client.express("doubtful")
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
