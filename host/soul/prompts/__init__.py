"""The soul's words, in each language it speaks (`persona.language`): every text its rooms and its
brainstem say to the model or to the person.

A language is one module here, named by its code (en.py, zh.py), holding:

  system_prompt(persona, body_name, flock=False)   the system prompt
  TEXT       one dict, with the same keys in every language: the snapshot's lines, the tools'
             answers, the drives and hunger as they are felt, the fold's and the night's requests,
             the converse endpoint's lines, the brainstem's words (TEXT["brainstem"]). A value is
             a text, a tuple of texts (levels: boredom's three) or a dict of texts.
  WEEKDAYS   the days' names, Monday first

The soul picks its language once: `soul.lang = texts(persona.language)` (host/soul/loop.py), the
language's module; every room takes its words from it (`soul.lang.TEXT[...]`, or a `lang` handed to
a pure function). The brainstem lives in the model seam (host/llm/brainstem.py), which never imports
the soul: the soul hands it `lang.TEXT["brainstem"]`.

To add a language: copy en.py to <code>.py (e.g. de.py) and translate every value, keeping every
key, every tuple's length and every {placeholder}; tests/soul/test_soul_prompts.py checks that against
en.py. `LANGUAGES` finds the module, so `persona.language` accepts the new code (host/soul/config/table.py).
(The tools' descriptions and the words of the flock, shell and MCP tools are the tool's own, in
English, in host/soul/tools/.)
"""

import pkgutil
from importlib import import_module
from types import ModuleType

# persona.human when a config names no one (host/soul/config/table.py); a line to the soul that would
# name the person reads better without it (host/soul/reminders/delivery.py).
DEFAULT_HUMAN = "my human"
LANGUAGES = tuple(sorted(module.name for module in pkgutil.iter_modules(__path__) if not module.name.startswith("_")))


def texts(language: str) -> ModuleType:
    """The language `language` (a code in LANGUAGES): its system_prompt, TEXT and WEEKDAYS."""
    if language not in LANGUAGES:
        raise ValueError(f"no words for the language {language!r}: the soul speaks {', '.join(LANGUAGES)}")
    return import_module(f"{__name__}.{language}")
