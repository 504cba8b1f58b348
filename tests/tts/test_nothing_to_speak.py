"""A text the voice makes no sound for is a 400 saying so, never a WAV header with no samples: real voices
(Piper's joe and espeak-ng) in a real tts server on loopback decide which texts those are."""

import pytest

from soulstack.tts.server import make_tts_app, sounds
from soulstack.tts.voices import Voices
from tests.tts.helpers import joe_voices, needs_espeak, speech_like, wav_facts

pytestmark = needs_espeak


@pytest.fixture
async def piper(aiohttp_client):
    return await aiohttp_client(make_tts_app(voices=joe_voices()))


async def test_the_premise_piper_makes_no_samples_for_punctuation_alone_and_espeak_only_zeros():
    for text in ("...", "!?", "—", "。。。"):
        assert await (await joe_voices().choose(text, None)).synthesize(text) == b""
    silence = await (await Voices.espeak_only().choose("...", None)).synthesize("...")
    assert len(silence) > 0 and not sounds(silence)  # 0.3 s of zeros


@pytest.mark.parametrize("text", ["...", "!?", "— …", "。。。", "✓. ♪."])  # the last: two sentences, neither said
async def test_punctuation_alone_is_a_400_naming_it(piper, text):
    response = await piper.post("/tts", json={"text": text})
    answer = await response.json()
    assert response.status == 400, answer
    assert (
        answer["message"] == f'"text" has nothing to speak: {joe_voices().main.describe()} makes no sound for {text!r}'
    )


@pytest.mark.parametrize("text", ["%", "... Hello.", "Hi!", "42"])
async def test_a_text_with_anything_the_voice_says_is_spoken(piper, text):
    response = await piper.post("/tts", json={"text": text})
    assert response.status == 200 and response.content_type == "audio/wav"
    speech_like(wav_facts(await response.read()), 0.2, 3.0)


async def test_espeak_ng_is_asked_too(aiohttp_client):
    client = await aiohttp_client(make_tts_app())  # espeak-ng alone: its silence is zeros, not no samples
    response = await client.post("/tts", json={"text": "..."})
    assert (
        response.status == 400 and "nothing to speak: espeak-ng en makes no sound" in (await response.json())["message"]
    )
    response = await client.post("/tts", json={"text": "!?"})  # espeak-ng says these marks aloud
    assert response.status == 200
    speech_like(wav_facts(await response.read()), 0.3, 4.0)


def test_sounds_is_any_sample_but_zero():
    assert not sounds(b"") and not sounds(bytes(9632))
    assert sounds(b"\x00\x00\x01\x00") and sounds(b"\x00\x80")


async def test_the_servers_root_answers_as_tts_does(piper):
    """`POST /` is documented beside `/tts` (docs/voice.md), for a device whose speech URL is the root."""
    response = await piper.post("/", json={"text": "Hello."})
    assert response.status == 200 and response.content_type == "audio/wav"
    speech_like(wav_facts(await response.read()), 0.2, 3.0)
    response = await piper.post("/", json={"text": "..."})
    assert response.status == 400 and "nothing to speak" in (await response.json())["message"]
