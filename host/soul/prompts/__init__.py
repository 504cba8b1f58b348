"""The soul's words to itself, in each language it speaks (`persona.language`).

Each language module has `system_prompt(persona, body_name)` and `TEXT`, a dict
of the same keys: snapshot lines and tool answers. A new language is one new
module with the same names.
"""

from importlib import import_module

LANGUAGES = ("en", "zh")


def texts(language: str):
    return import_module(f"soulstack.soul.prompts.{language if language in LANGUAGES else 'en'}")
