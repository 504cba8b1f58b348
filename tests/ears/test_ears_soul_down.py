"""Ears' nudges wait out a soul that is down (host/ears/soul.py, through the nudge contract's sender).

Ears hears speech its recogniser makes no words of (the real openai SDK against a protocol-true
transcriber that answers none) while nothing listens at the soul's address: it answers 422 with
`soul_told` (the sender holds the nudge). Then a real soul (build_soul, its real server) starts on
that address, and the nudge reaches it: its model is shown what ears told.
"""

import asyncio
import contextlib

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
        async with contextlib.aclosing(
            OpenAITranscriber(words.base_url + "/v1", "k", "whisper-1")
        ) as recogniser:  # it hears no words
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


async def test_words_the_soul_did_not_take_are_a_502_and_reach_it_once_it_is_up(tmp_path):
    """Heard, but the soul is down: the robot is told at once (a 502 it says to the person, where a 200
    left it thinking for 20 s), and the words are kept as a nudge that reaches the soul once it is up."""
    port = free_port()
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake, FakeTranscriber() as words:
        words.texts = ["what time is it"]
        soul = Soul(f"http://127.0.0.1:{port}", None)
        async with contextlib.aclosing(OpenAITranscriber(words.base_url + "/v1", "k", "whisper-1")) as recogniser:
            ears = Ears(recogniser, soul, {"stackchan": Body("stackchan", body.base_url, None)})
            async with listening(make_ears_app(ears), "127.0.0.1", 0) as ears_port, aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{ears_port}/utterance"
                async with http.post(url, data=speech_wav()[44:], headers=HEADERS) as response:
                    answer = await response.json()
                assert response.status == 502 and answer["soul_told"] is True and answer["heard"] == "what time is it"
                assert answer["message"].startswith(
                    f"I heard you, but the soul at http://127.0.0.1:{port} did not take"
                )
                assert ears.stats["failed"] == 1 and body.spoken == []
                living = a_soul(tmp_path, body, fake, port=port)
                async with Running(living):
                    await until(lambda: requests_hearing(fake, "what time is it"), "the words at the soul's model")
                    assert soul.sender.waiting == []
