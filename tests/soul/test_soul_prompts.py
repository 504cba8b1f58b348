"""The soul's words live in host/soul/prompts/, one module per language, each with every key of English."""

import ast
import inspect
import string
from pathlib import Path

import pytest

from soulstack.soul import prompts
from soulstack.soul.config import Persona
from soulstack.soul.prompts import LANGUAGES, texts
from tests.helpers import ROOT

HOST = ROOT / "host"
ENGLISH = texts("en")


def entries(value, path=()):
    """(path, text) for every text in a TEXT value (a text, a tuple of texts, a dict of texts)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from entries(item, path + (index,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from entries(item, path + (key,))
    else:
        raise AssertionError(f"{path}: a value is a text, a tuple or a dict, not {type(value).__name__}")


def shape(value):
    """The keys, lengths and types of a value, without its words."""
    if isinstance(value, tuple):
        return ("tuple", tuple(shape(item) for item in value))
    if isinstance(value, dict):
        return ("dict", {key: shape(item) for key, item in value.items()})
    return type(value).__name__


def placeholders(text: str) -> set:
    return {(name, spec) for _, name, spec, _ in string.Formatter().parse(text) if name is not None}


def test_the_languages_are_the_modules_in_prompts():
    folder = Path(prompts.__file__).parent
    assert LANGUAGES == tuple(sorted(path.stem for path in folder.glob("*.py") if not path.stem.startswith("_")))
    assert {"en", "zh"} <= set(LANGUAGES)
    with pytest.raises(ValueError, match=f"the soul speaks {', '.join(LANGUAGES)}"):
        texts("no-such-language")


@pytest.mark.parametrize("language", [code for code in LANGUAGES if code != "en"])
def test_every_language_has_every_key_of_english_with_the_same_placeholders(language):
    words = texts(language)
    assert set(words.TEXT) == set(ENGLISH.TEXT)
    for key, english in ENGLISH.TEXT.items():
        assert shape(words.TEXT[key]) == shape(english), key
        translated = dict(entries(words.TEXT[key]))
        for path, text in entries(english):
            assert placeholders(translated[path]) == placeholders(text), (key, path)
            assert translated[path].strip(), (key, path)
    assert len(words.WEEKDAYS) == len(ENGLISH.WEEKDAYS) == 7
    assert inspect.signature(words.system_prompt) == inspect.signature(ENGLISH.system_prompt)
    persona = Persona(name="Pip", human="Ana", notes="curious")
    for flock in (False, True):
        said = words.system_prompt(persona, "StackChan", flock=flock)
        assert "Pip" in said and "Ana" in said and "StackChan" in said and "curious" in said
        assert ("hand_to_flock" in said) is flock


def test_the_config_accepts_every_language_found_here(tmp_path):
    from soulstack.config_checks import ConfigError
    from soulstack.soul.config import from_dict

    for language in LANGUAGES:
        cfg, _ = from_dict({"soulDir": str(tmp_path), "persona": {"language": language}})
        assert cfg.persona.language == language
    with pytest.raises(ConfigError, match=f"persona.language must be one of {', '.join(LANGUAGES)}"):
        from_dict({"soulDir": str(tmp_path), "persona": {"language": "no-such-language"}})


def language_dicts(path: Path) -> list:
    """Line numbers of dict literals keyed by a language code ({"en": ..., "zh": ...}) in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        and any(isinstance(key, ast.Constant) and key.value in LANGUAGES for key in node.keys)
    ]


def test_no_words_by_language_outside_prompts():
    modules = [*(HOST / "soul").rglob("*.py"), *(HOST / "llm").rglob("*.py")]
    found = {
        str(path.relative_to(HOST)): lines
        for path in modules
        if Path(prompts.__file__).parent not in path.resolve().parents and (lines := language_dicts(path))
    }
    assert found == {}
