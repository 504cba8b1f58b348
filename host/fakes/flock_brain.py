"""A scripted mind for the flock behind the fake Anthropic server, so the flock works offline.

`python -m soulstack.fakes.run_fake_anthropic --flock [--pace SECONDS]` serves it
(docs/try-the-flock-offline.md). The rules are the demo's (soulstack.flock.demo.brain, which
`soulstack flock --demo` runs inside the flock); here they answer Messages API requests, so the
flock reaches them through the real anthropic SDK. No model thinks; every answer says so.

`paced(seconds)` answers the same after waiting about that long, so a person (or a
screenshot) sees crows in the air, landings and speech bubbles one after another.
"""

import asyncio

from soulstack.fakes.anthropic_api import text, tool_use
from soulstack.flock.demo import brain


def _text_of(content) -> str:
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if isinstance(b, dict))


def answer(body: dict) -> dict:
    """The reply to one Messages API request from the flock."""
    tools = [tool.get("name") for tool in body.get("tools") or []]
    said = brain.reply(_text_of(body.get("system") or ""), _text_of(body["messages"][0]["content"]), tools)
    return tool_use(said[1], said[2]) if said[0] == "tool" else text(said[1])


def paced(seconds: float):
    """`answer` after a wait of 0.75-1.25 × `seconds` (the same for the same call)."""

    async def answer_slowly(body: dict) -> dict:
        seed = _text_of(body.get("system") or "") + _text_of(body["messages"][-1]["content"])
        await asyncio.sleep(brain.wait_s(seconds, seed))
        return answer(body)

    return answer_slowly
