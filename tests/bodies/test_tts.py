"""`soulstack tts`: a real aiohttp server on loopback, real espeak-ng, real WAV checks."""

import io
import shutil
import wave

import pytest

from soulstack.audio import resample_linear
from soulstack.tts.server import make_tts_app

needs_espeak = pytest.mark.skipif(
    not shutil.which("espeak-ng"), reason="espeak-ng is not installed (tools/test installs it when apt is available)"
)


@pytest.fixture
async def tts(aiohttp_client):
    return await aiohttp_client(make_tts_app(token="tt"))


AUTH = {"Authorization": "Bearer tt"}


@needs_espeak
async def test_returns_16k_mono_wav(tts):
    response = await tts.post("/tts", json={"text": "Hello, I am a small robot."}, headers=AUTH)
    assert response.status == 200 and response.content_type == "audio/wav"
    with wave.open(io.BytesIO(await response.read())) as audio:
        assert (audio.getframerate(), audio.getnchannels(), audio.getsampwidth()) == (16000, 1, 2)
        assert 0.5 < audio.getnframes() / 16000 < 10  # about as long as the sentence


@needs_espeak
async def test_voice_and_bad_voice(tts):
    response = await tts.post("/tts", json={"text": "你好", "voice": "cmn"}, headers=AUTH)
    assert response.status == 200
    response = await tts.post("/tts", json={"text": "hi", "voice": "no-such-voice"}, headers=AUTH)
    assert response.status == 400 and "no voice" in (await response.json())["message"]


@pytest.mark.parametrize(
    "body, words",
    [
        (b"{broken", "not valid JSON"),
        (b"[]", "JSON object"),
        (b'{"text": ""}', "non-empty"),
        (b'{"text": 3}', "non-empty"),
        (b'{"text": "hi", "voice": "en; rm -rf /"}', "voice"),
    ],
)
async def test_bad_input_is_400(tts, body, words):
    response = await tts.post("/tts", data=body, headers={**AUTH, "Content-Type": "application/json"})
    assert response.status == 400
    assert words in (await response.json())["message"]


async def test_token_required(tts):
    response = await tts.post("/tts", json={"text": "hi"})
    assert response.status == 401


async def test_missing_espeak_is_503(aiohttp_client, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH where no espeak-ng can be found
    client = await aiohttp_client(make_tts_app())
    response = await client.post("/tts", json={"text": "hi"})
    assert response.status == 503 and "espeak-ng" in (await response.json())["message"]


def test_linear_resampling_keeps_duration_and_shape():
    import array

    source = array.array("h", [0, 1000, 2000, 3000] * 5512)  # 22048 samples at 22050 Hz
    out = resample_linear(source, 22050, 16000)
    assert abs(len(out) - 16000) <= 2
    assert min(out) >= 0 and max(out) <= 3000


def test_pieces_join_to_the_whole_and_the_first_is_short():
    from soulstack.tts.server import pieces

    audio = bytes(range(256)) * 300  # 76800 bytes: 2.4 s at 16 kHz
    parts = list(pieces(audio))
    assert len(parts) > 2 and len(parts[0]) < len(parts[1])  # the first piece short, so playback starts soon
    assert b"".join(parts) == audio


@needs_espeak
async def test_streamed_answer_has_its_true_length(tts):
    response = await tts.post("/tts", json={"text": "It is three o'clock. Time for tea!"}, headers=AUTH)
    body = await response.read()
    assert response.status == 200 and int(response.headers["Content-Length"]) == len(body)
    with wave.open(io.BytesIO(body)) as audio:
        assert audio.getnframes() * 2 + 44 == len(body)
