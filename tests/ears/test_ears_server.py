"""`soulstack ears`'s server in this process: real pocketsphinx, the real openai SDK for converse and
transcription against protocol-true fakes (tests/ears/fakes.py), a recording body for /speak."""

import asyncio
import contextlib
import json

import numpy as np
import pytest

from soulstack.ears.openai_asr import OpenAITranscriber
from soulstack.ears.recognise import speech_end
from soulstack.ears.sphinx import PocketSphinx
from soulstack.fakes.openai_api import text
from soulstack.fakes.scripted_server import steered
from tests.ears.fakes import FakeTranscriber
from tests.ears.in_process import PCM, EarsInProcess
from tests.ears.speech import speech_wav
from tests.helpers import until

SPHINX = PocketSphinx()  # one pool for the module: a decoder takes ~0.4 s to load


class Running(EarsInProcess):
    def __init__(self, recogniser=SPHINX, **options):
        super().__init__(recogniser, **options)


SPEECH = speech_wav()[44:]


async def test_words_go_to_the_soul_and_each_sentence_to_the_body_as_it_comes():
    held = asyncio.Event()
    streamed = []

    async def hold_after_the_first_sentence(data):
        chunk = json.loads(data) if data.startswith("{") else {}
        streamed.extend(choice["delta"].get("content") or "" for choice in chunk.get("choices", []))
        if "Time" in "".join(streamed):
            await held.wait()  # the model is still writing the rest

    reply = steered(text("It is three. Time for tea! And"), after_event=hold_after_the_first_sentence)
    async with Running(reply=reply) as ears:
        status, answer = await ears.send(SPEECH, utterance_id="boot1-1")
        assert status == 200 and answer["heard"] == "what time is it", answer
        await until(lambda: ears.body.spoken[:1] == ["It is three."], "the first sentence, while the rest is held")
        assert "And" not in ears.body.spoken
        held.set()
        await until(lambda: len(ears.body.spoken) == 3, "three sentences at /speak")
        assert ears.body.spoken == ["It is three.", "Time for tea!", "And"]
        asked = ears.soul.bodies[-1]
        assert asked["stream"] is True
        assert asked["messages"] == [{"role": "user", "content": "what time is it"}]
        assert asked["metadata"] == {"heard_by": "stackchan"}


async def test_a_resent_utterance_is_heard_once():
    async with Running() as ears:
        first = await ears.send(SPEECH, utterance_id="b-7")
        again = await ears.send(SPEECH, utterance_id="b-7")  # a reconnecting robot resends
        same_audio = await ears.send(SPEECH, utterance_id="b-8")  # the same bytes under a new id
        assert first == (200, {"heard": "what time is it", "utterance_id": "b-7"})
        assert again == (200, {"heard": "what time is it", "duplicate": True})
        assert same_audio[1]["duplicate"] is True
        await until(lambda: ears.body.spoken, "the answer")
        await asyncio.sleep(0.2)
        assert len(ears.soul.bodies) == 1  # one question reached the soul


def faint_hiss(rms: float, seconds: float = 1.0) -> bytes:
    """Seeded white noise at `rms` (of 32767): a quiet room's own sound, no voice in it."""
    noise = np.random.default_rng(7).normal(0, rms, int(16000 * seconds))
    return noise.round().astype("<i2").tobytes()


async def test_silence_and_a_faint_hiss_are_no_speech_never_heard_and_the_soul_is_not_told():
    async with FakeTranscriber(texts=[""]) as whisper:
        async with contextlib.aclosing(OpenAITranscriber(whisper.base_url + "/v1", "k", "whisper-1")) as recogniser:
            async with Running(recogniser=recogniser) as ears:
                for audio in (bytes(32000), faint_hiss(30), bytes(32000)):  # digital silence (twice), a hiss at -61 dB
                    status, answer = await ears.send(audio)
                    assert status == 422 and answer["soul_told"] is False and answer["speech"] is False, answer
                    assert (
                        answer["message"].startswith("I heard no speech:")
                        and "a voice is over 250" in answer["message"]
                    )
                assert whisper.files == []  # no recogniser was asked
                # The same speech 20 dB quieter (its loudest 30 ms ~RMS 750 of 32767) is still speech: it is heard.
                quiet = (np.frombuffer(SPEECH, "<i2") * 0.1).astype("<i2").tobytes()
                whisper.status = 500
                status, answer = await ears.send(quiet)
                assert status == 502 and answer["soul_told"] is True and len(whisper.files) == 1, answer
                # Nudges reach the soul in the order they were told: the first it gets is this failure's,
                # so nothing was told of the silence before it.
                await until(lambda: ears.soul.nudges, "the nudge")
                assert [piece["code"] for piece in ears.soul.nudges[0]["codes"]] == ["recogniser_failed"]
                whisper.status = 200  # and sound the recogniser makes no words of is still told as that
                status, answer = await ears.send(quiet[:-2])
                assert status == 422 and answer["soul_told"] is True and len(whisper.files) == 2, answer
                await until(lambda: len(ears.soul.nudges) == 2, "the second nudge")
                assert ears.soul.nudges[1]["codes"] == [{"code": "could_not_hear", "about": {"body": "stackchan"}}]
                assert "couldn't make out the words" in ears.soul.nudges[1]["reason"]
                status, answer = await ears.send(quiet[:-2])  # resent: the same answer, the recogniser not asked again
                assert status == 422 and answer["duplicate"] is True and len(whisper.files) == 2
                health = await (await ears.http.get(ears.url + "/health")).json()
                assert (health["no_speech"], health["failed"], health["no_words"]) == (3, 1, 1), health
                assert ears.soul.bodies == []  # nothing pretended to be words


async def test_the_openai_recogniser_uploads_a_wav_and_its_failure_is_told():
    async with FakeTranscriber(texts=["What's the weather?"]) as whisper:
        async with contextlib.aclosing(OpenAITranscriber(whisper.base_url + "/v1", "k", "whisper-1")) as recogniser:
            async with Running(recogniser=recogniser) as ears:
                status, answer = await ears.send(SPEECH)
                assert (status, answer["heard"]) == (200, "What's the weather?")
                name, kind, data = whisper.files[0]
                # The speech, up to a moment after its last voiced frame: the trailing quiet is not sent.
                assert name == "utterance.wav" and data[:4] == b"RIFF" and data[44:] == speech_end(SPEECH)
                assert SPEECH.startswith(data[44:]) and len(data[44:]) > len(SPEECH) // 2
                whisper.status = 500
                status, answer = await ears.send(SPEECH[:-2])
                assert status == 502 and "500" in answer["message"] and answer["soul_told"], answer
                await until(lambda: len(ears.soul.nudges) == 1, "the nudge")
                assert "couldn't make out the words" in ears.soul.nudges[-1]["reason"]


@pytest.mark.parametrize(
    "headers, status, words",
    [
        ({"content_type": "audio/wav"}, 415, "audio/L16"),
        ({"content_type": "audio/L16; rate=8000"}, 415, "16 kHz"),
        ({"content_type": "audio/L16; rate=16000; channels=2"}, 415, "mono"),
        ({"body": "nobody"}, 404, "ears knows: stackchan"),
        ({"body": "bad\tname"}, 400, "X-Soulstack-Body"),
        ({"utterance_id": "x" * 65}, 400, "X-Utterance-Id"),
    ],
)
async def test_a_wrong_stream_is_refused_naming_what_is_wrong(headers, status, words):
    async with Running() as ears:
        got, answer = await ears.send(SPEECH[:6400], **headers)
        assert got == status and words in answer["message"], answer


async def test_caps_tokens_and_one_stream_at_a_time():
    async with Running(token="s3cret", max_seconds=1) as ears:
        assert (await ears.send(SPEECH, token="wrong"))[0] == 401
        status, answer = await ears.send(bytes(40000))  # 1.25 s
        assert status == 413 and "at most 1 s" in answer["message"]
        assert (await ears.send(b"\x00" * 100))[0] == 400  # under 0.1 s

        gate = asyncio.Event()

        async def slow():
            yield SPEECH[:3200]
            await gate.wait()
            yield SPEECH[3200:6400]

        headers = {"Content-Type": PCM, "X-Soulstack-Body": "stackchan", "Authorization": "Bearer s3cret"}
        first = asyncio.create_task(ears.http.post(ears.url + "/utterance", data=slow(), headers=headers))
        await until(lambda: ears.ears.streaming, "the first stream to open")
        status, answer = await ears.send(SPEECH[:6400])
        assert status == 409 and "one at a time" in answer["message"]
        gate.set()
        (await first).release()


async def test_a_long_sentence_reaches_the_speak_in_one_piece():
    """Ears cuts by the one sentence rule (protocol/sentences.py) up to /speak's own limit (2,000
    characters, firmware/core/protocol.py); it cut at 400 before, so this sentence arrived in four."""
    long = "And then " + " ".join(["we walked a little further"] * 56) + "."
    assert 1400 < len(long) < 2000
    async with Running(reply=text(long + " 他说『好。』然后呢？")) as ears:
        status, _ = await ears.send(SPEECH)
        assert status == 200
        await until(lambda: len(ears.body.spoken) >= 3, "the answer at /speak")
        assert ears.body.spoken == [long, "他说『好。』", "然后呢？"]  # a closing quote stays with its sentence


async def test_a_decimal_split_across_stream_chunks_is_one_sentence():
    """The soul streams its answer in small pieces; "3." at the end of one may become "3.5"."""
    async with Running(reply=text("Pay 123.5 euros now. Thanks!")) as ears:  # streamed 8 characters a chunk: "Pay 123."
        status, _ = await ears.send(SPEECH)
        assert status == 200
        await until(lambda: len(ears.body.spoken) >= 2, "the answer at /speak")
        assert ears.body.spoken == ["Pay 123.5 euros now.", "Thanks!"]


async def test_a_stream_that_falls_silent_is_cut_off_and_not_held_open():
    """Before ears read through serving.read_stream, a silent stream was held for the whole
    2 x max_seconds + 5 s; now it is cut after read_stream's idle bound (10 s) with a 408."""
    async with Running(max_seconds=30) as ears:

        async def stalls():
            yield bytes(6400)
            await asyncio.sleep(40)

        headers = {"Content-Type": PCM, "X-Soulstack-Body": "stackchan"}
        started = asyncio.get_running_loop().time()
        async with ears.http.post(ears.url + "/utterance", data=stalls(), headers=headers) as response:
            answer = await response.json()
        took = asyncio.get_running_loop().time() - started
        assert response.status == 408 and "stopped arriving" in answer["message"], answer
        assert took < 20, took
        assert ears.soul.bodies == []
