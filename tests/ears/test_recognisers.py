"""The recognisers behind `soulstack ears`: real Whisper (the bundled tiny.en), real pocketsphinx, Home
Assistant's real wyoming-faster-whisper on loopback, and the openai SDK against a protocol-true fake.
(Moonshine, the default for English: test_moonshine.py.)"""

import asyncio
import contextlib

import aiohttp
import pytest

from soulstack.ears.recognise import SPECULATE_AFTER_S, Voicing, WholeSession, speech_end
from soulstack.ears.sphinx import PocketSphinx
from soulstack.ears.whisper import Whisper
from soulstack.ears.wyoming_asr import WyomingRecogniser
from soulstack.ears.openai_asr import OpenAITranscriber
from soulstack.protocol.nudges import parse_nudge, told_in
from soulstack.soul.prompts import texts
from tests.ears.fakes import FakeTranscriber
from tests.helpers import until
from tests.ears.speech import plain, speech_wav
from tests.ears.in_process import PCM
from tests.ears.test_ears_server import Running
from tests.voice_peers import faster_whisper_peer

WHISPER = Whisper()  # one model for the module, as one ears process loads it once
SPEECH = speech_wav("remind me to call my mother tomorrow")[44:]
QUIET = bytes(2 * 16000)  # a second of silence: what a robot sends before it ends an utterance


@pytest.mark.parametrize("recogniser", [WHISPER, PocketSphinx()], ids=["whisper", "pocketsphinx"])
async def test_the_same_audio_gives_the_same_words_however_it_was_cut_into_chunks(recogniser):
    heard = set()
    for chunks in (4096, 333):  # an odd size splits samples across chunks too
        async with Running(recogniser=recogniser) as ears:  # a fresh ears each time: no duplicate
            status, answer = await ears.send(SPEECH + QUIET, chunks=chunks)
        assert status == 200, answer
        heard.add(answer["heard"])
    assert len(heard) == 1, heard
    if recogniser is WHISPER:
        assert plain(heard.pop()) == "remind me to call my mother tomorrow"


async def test_whisper_hears_a_question_and_silence_is_no_speech():
    async with Running(recogniser=WHISPER) as ears:
        status, answer = await ears.send(speech_wav("what time is it")[44:] + QUIET)
        assert status == 200 and plain(answer["heard"]) == "what time is it", answer
        status, answer = await ears.send(QUIET * 2)  # no voiced frame: nobody spoke, and the soul is not told so
        assert status == 422 and answer["soul_told"] is False and "no speech" in answer["message"], answer


async def cut_off(ears, audio):
    """A stream that breaks off mid-way, as a robot losing Wi-Fi does."""

    async def stream():
        yield audio[: len(audio) // 2]
        raise ConnectionError("the robot went away")

    headers = {"Content-Type": PCM, "X-Soulstack-Body": "stackchan"}
    with pytest.raises(aiohttp.ClientError):
        async with ears.http.post(ears.url + "/utterance", data=stream(), headers=headers):
            pass


async def test_abandoned_oversize_and_duplicate_streams_cost_pocketsphinx_no_reload():
    sphinx = PocketSphinx()
    async with Running(recogniser=sphinx, max_seconds=2) as ears:
        await ears.ears.warm()
        assert sphinx.loaded == 1
        for _ in range(3):
            await cut_off(ears, SPEECH)
            status, answer = await ears.send(SPEECH + SPEECH)  # over 2 s: refused while it streams
            assert status == 413, answer
        first = await ears.send(speech_wav("what time is it")[44:])
        again = await ears.send(speech_wav("what time is it")[44:])  # the same audio: a duplicate
        assert first[0] == 200 and again[1].get("duplicate") is True, (first, again)
        await asyncio.gather(*sphinx.recycling)  # the abandoned sessions' decoders, given back
        assert sphinx.loaded == 1 and len(sphinx.idle) == 1  # one decoder did it all: no reload


@pytest.mark.parametrize(
    "content_type",
    [
        "audio/L16; rate=16000; rate=8000",
        "audio/L16; rate=16000; channels=1; channels=2",
        "audio/L16; channels=1",
        "audio/L16; rate=44100; channels=1",
        "audio/L16; rate=16000; channels=2",
    ],
)
async def test_a_content_type_that_contradicts_itself_or_is_not_16k_mono_is_a_415(content_type):
    async with Running(recogniser=WHISPER) as ears:
        status, answer = await ears.send(SPEECH, content_type=content_type)
    assert status == 415 and "16 kHz mono" in answer["message"], answer


async def test_the_wyoming_recogniser_hears_through_home_assistants_wyoming_faster_whisper(tmp_path):
    async with faster_whisper_peer(tmp_path) as peer:
        recogniser = WyomingRecogniser(peer.uri, "en")
        await recogniser.warm()
        assert "faster-whisper" in recogniser.describe(), recogniser.describe()  # what describe offered
        async with Running(recogniser=recogniser) as ears:
            status, answer = await ears.send(SPEECH + QUIET)
        assert status == 200 and plain(answer["heard"]) == "remind me to call my mother tomorrow", answer
    async with Running(recogniser=recogniser) as ears:  # the server is gone now
        status, answer = await ears.send(SPEECH + QUIET)
    assert status == 502 and "could not be reached" in answer["message"] and answer["soul_told"], answer


async def test_a_chinese_soul_gets_simplified_characters_whatever_the_recogniser_wrote():
    async with FakeTranscriber(texts=["現在幾點了？", "現在幾點了？"]) as server:
        async with contextlib.aclosing(OpenAITranscriber(server.base_url + "/v1", "k", "whisper-1")) as recogniser:
            async with Running(recogniser=recogniser, language="zh") as ears:
                status, answer = await ears.send(SPEECH)
            assert (status, answer["heard"]) == (200, "现在几点了？")
            async with Running(recogniser=recogniser, language="en") as ears:  # an English soul: as written
                status, answer = await ears.send(SPEECH)
            assert (status, answer["heard"]) == (200, "現在幾點了？")


class Counting:
    """The recogniser seam WholeSession calls (`speculate`, `transcribe`), recording what it is given."""

    speculate = True

    def __init__(self):
        self.given = []

    async def transcribe(self, pcm):
        self.given.append(pcm)
        return f"{len(pcm)} bytes"


async def feed(session, audio, chunks=3200):
    for at in range(0, len(audio), chunks):
        await session.feed(audio[at : at + chunks])
        await asyncio.sleep(0)  # as in the server, other tasks (a started guess) run between chunks


async def test_recognition_starts_in_the_quiet_before_the_stream_ends_and_its_answer_is_that_of_the_whole():
    owner = Counting()
    session = WholeSession(owner)
    await feed(session, SPEECH + QUIET)
    assert len(owner.given) == 1  # started once the stream had been quiet SPECULATE_AFTER_S
    assert await session.finish() == f"{len(speech_end(SPEECH + QUIET))} bytes"
    assert owner.given == [speech_end(SPEECH + QUIET)]  # not recognised again at the end
    assert SPECULATE_AFTER_S < len(QUIET) / 32000


def room_noise(count: int, level: int, seed: int) -> bytes:
    import numpy

    noise = numpy.random.default_rng(seed).normal(0, level, count)
    return numpy.clip(noise, -32768, 32767).astype("<i2").tobytes()


@pytest.mark.parametrize("noise", [0, 120], ids=["silence", "a-fan"])
def test_the_end_of_speech_stays_put_while_the_quiet_after_it_goes_on(noise):
    # The early guess is the answer only if the end found after SPECULATE_AFTER_S of quiet is the end
    # found when the stream stops; a word's fading end must not turn voiced as more quiet arrives.
    import numpy

    speech = numpy.frombuffer(speech_wav("good morning how did you sleep")[44:], dtype="<i2").astype(numpy.int32)
    quiet = numpy.zeros(2 * 16000, dtype=numpy.int32)
    whole = numpy.concatenate([speech, quiet])
    if noise:
        whole = whole + numpy.frombuffer(room_noise(len(whole), noise, seed=7), dtype="<i2")
    audio = numpy.clip(whole, -32768, 32767).astype("<i2").tobytes()
    voicing, ends = Voicing(), set()
    for at in range(0, len(audio), 3200):
        voicing.add(audio[at : at + 3200])
        if voicing.quiet_s() >= SPECULATE_AFTER_S:
            ends.add(voicing.speech_end(min(len(audio), at + 3200)))
    assert ends == {len(speech_end(audio))}


async def test_speech_after_a_pause_throws_the_early_guess_away():
    owner = Counting()
    session = WholeSession(owner)
    pause = bytes(int(2 * 16000 * (SPECULATE_AFTER_S + 0.2)))
    whole = SPEECH + pause + SPEECH + QUIET
    await feed(session, whole)
    assert await session.finish() == f"{len(speech_end(whole))} bytes"
    assert owner.given[-1] == speech_end(whole) and len(owner.given) == 2  # the guess, then the whole
    assert len(owner.given[0]) < len(owner.given[1])


async def test_ears_tells_what_happened_as_codes_the_soul_tells_in_its_language():
    """No words made out, then a failing recogniser: each told as a code beside its plain reason (the
    recogniser's own words as they came); a Chinese soul tells them in Chinese (tests/test_zh_soul.py)."""
    async with FakeTranscriber(texts=[""]) as server:
        async with contextlib.aclosing(OpenAITranscriber(server.base_url + "/v1", "k", "whisper-1")) as recogniser:
            async with Running(recogniser=recogniser, language="zh") as ears:
                status, answer = await ears.send(SPEECH)
                assert status == 422 and answer["soul_told"], answer
                await until(lambda: ears.soul.nudges, "the nudge")
                assert ears.soul.nudges[-1]["codes"] == [{"code": "could_not_hear", "about": {"body": "stackchan"}}]
                told = texts("zh").TEXT["nudge"]
                zh = "有人对我说话了（stackchan听到了），但我没听清说的是什么"
                assert told_in(parse_nudge(ears.soul.nudges[-1]), told) == zh
                server.status = 500  # the recogniser fails: its own words as they came
                status, answer = await ears.send(SPEECH[:-2])
                await until(lambda: len(ears.soul.nudges) == 2, "the second nudge")
                (piece,) = ears.soul.nudges[-1]["codes"]
                assert status == 502 and piece["code"] == "recogniser_failed" and "500" in piece["about"]["why"]
                assert ears.soul.nudges[-1]["reason"].startswith(
                    "someone spoke to me (stackchan heard it) but I couldn't"
                )


def test_the_start_line_says_the_audio_leaves_only_when_it_does():
    from soulstack.ears.openai_asr import OpenAITranscriber

    leaves = "(the audio leaves this computer)"
    for base_url, away in [
        ("http://127.0.0.1:8080/v1", False),  # a whisper.cpp server on this computer
        ("http://localhost:8080/v1", False),
        ("http://[::1]:8080/v1", False),
        ("http://192.168.1.5:8080/v1", True),  # another machine in the house
        (None, True),  # OpenAI itself
    ]:
        described = OpenAITranscriber(base_url, "k", "whisper-1").describe()
        assert (leaves in described) == away, described
