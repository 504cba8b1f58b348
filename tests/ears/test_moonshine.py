"""Moonshine, ears' default for English: the real model from the moonshine-cpp wheel, on onnxruntime."""

import logging
import os

import pytest

from soulstack.ears import moonshine_model
from soulstack.ears.commands import EarsSettings, default_recogniser, make_recogniser
from soulstack.ears.moonshine import DECODER, END_TOKEN, Moonshine, model_dir, read_tokens, words_of
from soulstack.ears.whisper import Whisper
from soulstack.errors import UsageError
from soulstack.tts.voices import DEFAULT_VOICE, open_voices
from tests.ears.speech import plain, speech_wav, spoken_by
from tests.ears.test_ears_server import Running, faint_hiss
from tests.helpers import until

pytestmark = pytest.mark.skipif(model_dir() is None, reason="moonshine-cpp has no wheel for this machine")

QUIET = bytes(2 * 16000)
SENTENCE = "Please remind me to water the plants."


@pytest.fixture(scope="module")
def moonshine(tmp_path_factory):
    """One model for the module, as one ears process loads it once; its decoder converted into a cache of
    the module's own (never the user's)."""
    return Moonshine(cache=tmp_path_factory.mktemp("cache"))


def test_the_tokenizer_file_is_read_whole_and_words_come_out_of_its_pieces():
    pieces = read_tokens(model_dir() / "tokenizer.bin")
    assert len(pieces) == 32000  # the model's vocabulary (its logits have a few more, never chosen)
    assert pieces[:3] == [b"<unk>", b"<s>", b"</s>"] and pieces[3] == b"\x00" and pieces[258] == b"\xff"
    hello = [pieces.index("\u2581hello".encode()), pieces.index("\u2581world".encode())]
    assert words_of(pieces, hello + [END_TOKEN]) == "hello world"
    # Bytes the vocabulary lacks come as byte tokens: a character outside it arrives whole.
    assert words_of(pieces, [3 + byte for byte in "é".encode()]) == "é"


async def test_moonshine_hears_a_neural_voice_and_the_same_audio_however_it_was_cut(moonshine):
    question = await spoken_by(await open_voices(DEFAULT_VOICE), SENTENCE)
    heard = set()
    for chunks in (4096, 333):  # an odd size splits samples across chunks too
        async with Running(recogniser=moonshine) as ears:
            status, answer = await ears.send(question[44:] + QUIET, chunks=chunks)
        assert status == 200, answer
        heard.add(answer["heard"])
    assert len(heard) == 1 and plain(heard.pop()) == "please remind me to water the plants", heard


async def test_silence_and_a_faint_hiss_are_no_speech_and_a_neural_voice_after_them_is_heard(moonshine):
    question = await spoken_by(await open_voices(DEFAULT_VOICE), "What time is it?")
    async with Running(recogniser=moonshine) as ears:
        for audio in (QUIET * 2, faint_hiss(30, 2.0)):  # no voiced frame: the model is never asked
            status, answer = await ears.send(audio)
            assert status == 422 and answer["soul_told"] is False and "no speech" in answer["message"], answer
        status, answer = await ears.send(question[44:] + QUIET)  # soulstack tts's own voice
        assert status == 200 and plain(answer["heard"]) == "what time is it", answer
        await until(lambda: ears.soul.bodies, "the words at the soul")
    assert await moonshine.transcribe(QUIET * 2) == ""  # Silero VAD, inside, finds no speech in it either


async def test_the_converted_decoder_hears_what_the_wheels_own_files_hear_and_an_unwritable_cache_still_hears(
    moonshine, tmp_path, caplog
):
    clips = [(await spoken_by(await open_voices(DEFAULT_VOICE), SENTENCE))[44:], speech_wav()[44:]]
    converted = [await moonshine.transcribe(clip) for clip in clips]
    assert moonshine.converted is not None and moonshine.converted.is_relative_to(moonshine.cache)
    assert "decoder converted once into" in moonshine.describe()
    assert plain(converted[0]) == "please remind me to water the plants", converted
    # A cache that cannot be written (a file where its folder would be: root may write anywhere else).
    (tmp_path / "not-a-folder").write_bytes(b"")
    wheels = Moonshine(cache=tmp_path / "not-a-folder")
    with caplog.at_level(logging.WARNING, logger="soulstack.ears.moonshine"):
        heard = [await wheels.transcribe(clip) for clip in clips]
    assert heard == converted  # the same words, from the wheel's files as they are
    assert wheels.converted is None and "converted" not in wheels.describe()
    warned = [record.getMessage() for record in caplog.records if record.name == "soulstack.ears.moonshine"]
    assert len(warned) == 1 and "running the wheel's own files" in warned[0], warned


def test_a_second_open_finds_the_converted_decoder_and_converts_nothing(moonshine):
    moonshine._load()
    before = moonshine.converted.stat()
    again = Moonshine(cache=moonshine.cache)
    again._load()
    assert again.converted == moonshine.converted
    after = again.converted.stat()  # a conversion writes a new file and renames it over: a new inode
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


@pytest.mark.parametrize("damage", ["cut short", "garbage"])
async def test_a_damaged_file_at_the_cached_name_is_converted_again(moonshine, tmp_path, damage):
    moonshine._load()
    whole = moonshine.converted.read_bytes()
    target = moonshine_model.cached_path(moonshine.folder / DECODER, tmp_path)
    target.parent.mkdir(parents=True)
    damaged = whole[: len(whole) // 3] if damage == "cut short" else b"not a model" * 1000
    target.write_bytes(damaged)
    (target.parent / "decoder-of-an-older-wheel.ort").write_bytes(b"old")
    (target.parent / ".converting-killed-midway").mkdir()
    os.utime(target.parent / ".converting-killed-midway", (0, 0))
    mended = Moonshine(cache=tmp_path)
    assert await mended.transcribe(speech_wav()[44:]) == await moonshine.transcribe(speech_wav()[44:])
    # Made anew (two conversions are not byte for byte the same: onnxruntime lays its file out its own way).
    assert mended.converted == target and target.stat().st_size > len(damaged)
    # No work folder left behind, and what older conversions left is gone.
    assert [path.name for path in target.parent.iterdir()] == [target.name]


def test_a_decoder_laid_out_otherwise_is_a_clear_error_not_a_guess():
    from onnx import TensorProto, helper

    table = helper.make_tensor(moonshine_model.EMBED + "quantized", TensorProto.INT8, [2, 2], [1, 2, 3, 4])
    graph = helper.make_graph([], "decoder", [], [], [table])
    with pytest.raises(moonshine_model.UnexpectedGraph, match="no model.decoder.embed_tokens.weight_merged_0_scale"):
        moonshine_model.share_embedding(graph)


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
