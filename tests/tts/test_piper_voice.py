"""`soulstack tts` with its default voice, Piper en_US-joe-medium, run by onnxruntime in this process:
real servers on loopback, real espeak-ng for the phonemes, the real model making the audio."""

import asyncio
import json
import shutil
import sys

import aiohttp
import pytest

from soulstack.tts import espeak
from soulstack.tts.server import make_tts_app
from soulstack.tts.speech import UNKNOWN_SIZE
from soulstack.tts.voices import open_voices
from tests.firmware.helpers import FIRMWARE
from tests.tts.helpers import joe, joe_voices, needs_espeak, speech_like, wav_facts

pytestmark = needs_espeak

THREE_SENTENCES = "It is three o'clock. Time for tea! Shall we have some biscuits with it?"


@pytest.fixture
async def tts(aiohttp_client):
    return await aiohttp_client(make_tts_app(voices=joe_voices()))


async def test_phonemes_and_ids_are_what_piper_itself_gives():
    # Both sides taken from piper-tts 1.8 itself (a separate venv, never this one) for the same sentence:
    # its phonemes keep the clause punctuation, and every phoneme's id is followed by the PAD id (0).
    phonemes = await espeak.ipa("Hello, world.", "en-us")
    assert phonemes == "həlˈoʊ, wˈɜːld."
    assert joe().phoneme_ids(phonemes) == [
        *[1, 0, 20, 0, 59, 0, 24, 0, 120, 0, 27, 0, 100, 0, 8, 0, 3, 0],
        *[35, 0, 120, 0, 62, 0, 122, 0, 24, 0, 17, 0, 10, 0, 2],
    ]


async def test_chinese_characters_are_read_as_mandarin_not_as_english_tone_digits():
    # Debian 12's espeak-ng 1.51 `cmn` reads 你好 as "ni three hao three" (nɪ5θɹˈiː5...): the voice that is asked
    # for Mandarin must be one that reads it as Mandarin (there, cmn-latn-pinyin).
    phonemes = await espeak.ipa("你好，我是一个小机器人。", "cmn")
    assert "θɹ" not in phonemes and phonemes.startswith("n") and "," in phonemes


def test_clauses_keep_their_marks_and_numbers_stay_whole():
    assert espeak.clauses("It costs 3.50, or so; really?") == [("It costs 3.50", ","), ("or so", ";"), ("really", "?")]
    assert espeak.clauses("你好，世界。") == [("你好", ","), ("世界", ".")]
    assert espeak.clauses("no mark at all") == [("no mark at all", "")]


async def test_one_sentence_is_sent_whole_with_its_length(tts):
    response = await tts.post("/tts", json={"text": "Hello, I am a small robot."})
    body = await response.read()
    assert response.status == 200 and response.content_type == "audio/wav"
    assert int(response.headers["Content-Length"]) == len(body)  # what the firmware reckons a cut-off by
    facts = wav_facts(body)
    assert facts["data_size"] == len(body) - 44
    speech_like(facts, 1.0, 4.0)  # Piper says it in about 2 s


async def test_several_sentences_stream_chunked_with_an_unknown_length(tts):
    response = await tts.post("/tts", json={"text": THREE_SENTENCES})
    body = await response.read()
    assert response.status == 200
    assert "Content-Length" not in response.headers and response.headers["Transfer-Encoding"] == "chunked"
    facts = wav_facts(body)
    assert facts["data_size"] == UNKNOWN_SIZE
    speech_like(facts, 3.0, 9.0)  # three sentences: about 5 s


async def test_the_stackchan_adapter_reads_a_streamed_answer(tts):
    from soulstack.adapters.stackchan.speech import synthesize, wav_to_pcm

    async with aiohttp.ClientSession() as http:
        wav = await synthesize(http, str(tts.make_url("/tts")), THREE_SENTENCES)
    pcm = wav_to_pcm(wav, 24000)  # the adapter's own path: any WAV to its session's rate
    assert 3.0 < len(pcm) / 2 / 24000 < 9.0


async def test_the_firmware_reads_a_streamed_answer_over_http_1_0(tts):
    # The robot's own HTTP client and WAV reader (firmware/core, under CPython): HTTP/1.0, no chunks,
    # so the answer runs until the server closes the connection.
    if str(FIRMWARE) not in sys.path:
        sys.path.insert(0, str(FIRMWARE))
    from core import httpc, wav

    response = await httpc.post_json(str(tts.make_url("/tts")), {"text": THREE_SENTENCES})
    try:
        assert response.status == 200 and "content-length" not in response.headers
        assert await wav.read_header(response.read_exactly) == (16000, 1, 16)
        played, buffer = 0, bytearray(2048)
        while got := await response.readinto(buffer):
            played += got
    finally:
        await response.close()
    assert 3.0 < played / 32000 < 9.0


async def test_chinese_goes_to_espeak_cmn_without_a_chinese_piper_voice(tts):
    for request in ({"text": "你好，我是一个小机器人。"}, {"text": "ni hao", "lang": "zh"}):
        response = await tts.post("/tts", json=request)
        assert response.status == 200
        speech_like(wav_facts(await response.read()), 0.3, 6.0)


async def test_another_language_is_espeak_and_an_unknown_one_is_400(tts):
    response = await tts.post("/tts", json={"text": "Guten Tag.", "lang": "de"})
    assert response.status == 200
    speech_like(wav_facts(await response.read()), 0.3, 4.0)
    response = await tts.post("/tts", json={"text": "hi", "voice": "xx-nowhere"})
    assert response.status == 400 and "no voice" in (await response.json())["message"]


async def test_a_chinese_piper_voice_in_the_voice_dir_is_used(tmp_path, aiohttp_client):
    # A real Piper model under a Chinese voice's name and config (joe's weights, espeak-ng's cmn phonemes):
    # what is checked is that the voice folder's Chinese voice is found, loaded and speaks.
    name = "zh_CN-test-medium"
    (tmp_path / f"{name}.onnx").symlink_to(_joe_model())
    config = {**joe().config, "language": {"code": "zh_CN", "family": "zh"}, "espeak": {"voice": "cmn"}}
    (tmp_path / f"{name}.onnx.json").write_text(json.dumps(config), encoding="utf-8")
    voices = await open_voices("piper:en_US-joe-medium", tmp_path)
    assert f"Chinese: piper {name} (zh" in voices.describe()
    client = await aiohttp_client(make_tts_app(voices=voices))
    response = await client.post("/tts", json={"text": "你好。"})
    assert response.status == 200
    speech_like(wav_facts(await response.read()), 0.2, 4.0)


async def test_a_chinese_voice_that_needs_piper_tts_is_named_and_passed_over(tmp_path):
    shutil.copy(_joe_model(), tmp_path / "zh_CN-pinyin-medium.onnx")
    config = {**joe().config, "language": {"family": "zh"}, "phoneme_type": "pinyin"}
    (tmp_path / "zh_CN-pinyin-medium.onnx.json").write_text(json.dumps(config), encoding="utf-8")
    line = (await open_voices("piper:en_US-joe-medium", tmp_path)).describe()
    assert "Chinese: espeak-ng cmn (zh_CN-pinyin-medium.onnx:" in line and '"pinyin"' in line


async def test_a_client_that_leaves_mid_stream_does_not_break_the_server(tts):
    long_text = " ".join(f"This is sentence number {n}." for n in range(1, 9))
    response = await tts.post("/tts", json={"text": long_text})
    await response.content.readexactly(44)
    response.close()  # the robot hung up: a tap cut it off
    await asyncio.sleep(0)
    response = await tts.post("/tts", json={"text": "Still here."})
    assert response.status == 200
    speech_like(wav_facts(await response.read()), 0.3, 3.0)


def _joe_model():
    from soulstack.tts.piper import packaged_voice

    return packaged_voice()[1]
