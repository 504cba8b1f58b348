"""Ears' nudges wait out a soul that is down (host/ears/soul.py, through the nudge contract's sender).

Ears hears speech its recogniser makes no words of (the real openai SDK against a protocol-true
transcriber that answers none) while nothing listens at the soul's address: it answers 422 with
`soul_told` (the sender holds the nudge). Then a real soul (build_soul, its real server) starts on
that address, and the nudge reaches it: its model is shown what ears told.
"""

import asyncio

import aiohttp

from soulstack.ears.server import Ears, make_ears_app
from soulstack.ears.soul import Body, Soul
from soulstack.ears.openai_asr import OpenAITranscriber
from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.serving import listening
from tests.ears.fakes import FakeTranscriber
from tests.ears.speech import speech_wav
from tests.helpers import free_port
from tests.ears.in_process import PCM
from tests.helpers import until
from tests.soul.helpers import Running, a_soul, requests_hearing, sleep_long

HEADERS = {"Content-Type": PCM, "X-Soulstack-Body": "stackchan"}


async def test_a_nudge_told_while_the_soul_is_down_reaches_it_once_it_is_up(tmp_path):
    port = free_port()
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake, FakeTranscriber() as words:
        soul = Soul(f"http://127.0.0.1:{port}", None)
        recogniser = OpenAITranscriber(words.base_url + "/v1", "k", "whisper-1")  # it hears no words
        ears = Ears(recogniser, soul, {"stackchan": Body("stackchan", body.base_url, None)})
        async with listening(make_ears_app(ears), "127.0.0.1", 0) as ears_port, aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{ears_port}/utterance"
            async with http.post(url, data=speech_wav()[44:], headers=HEADERS) as response:
                answer = await response.json()
            assert response.status == 422 and answer["soul_told"] is True, answer
            await asyncio.sleep(0.5)  # the first delivery was refused at once (nothing listens)
            assert "couldn't make out the words" in soul.sender.waiting[0]  # kept while the soul is down
            living = a_soul(tmp_path, body, fake, port=port)
            async with Running(living):
                told = "someone spoke to me (stackchan heard it) but I couldn't make out the words"
                await until(lambda: requests_hearing(fake, told), "the soul's model to be shown the nudge")
                assert soul.sender.waiting == []
                assert len(requests_hearing(fake, told)) == 1
