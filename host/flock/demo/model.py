"""The demo's model: the scripted brain (brain.py) behind the flock's one model seam.

It answers `complete` as any model does, so every part of the flock (the Sentry's triage, the
crows, the Elder, banter, the nests' crows) works as it would with Claude; only nothing thinks.
Each call takes about `pace_s` (0.75-1.25 x), so a person watching the page sees the crows
take off, stay up and land one after another; 0 answers at once (the tests).
Its usage is an estimate (a token for every four characters), so the page's budget moves.
"""

import asyncio
import itertools

from soulstack.flock.demo import brain
from soulstack.llm.types import Message, Reply, TextBlock, ToolCall, Usage

PACE_S = 1.5  # the default: long enough to watch a flight, short enough for a list to finish in a minute
CHARS_PER_TOKEN = 4


class DemoModel:
    provider = "demo"
    model_id = "scripted"

    def __init__(self, pace_s: float = PACE_S, sleep=asyncio.sleep):
        self.pace_s, self.sleep = pace_s, sleep
        self.ids = itertools.count(1)

    async def complete(self, system, messages, tools=None, *, tool_choice=None, max_tokens=4096, cache=False):
        prompt = messages[0].text()
        if self.pace_s:
            await self.sleep(brain.wait_s(self.pace_s, system + messages[-1].text()))
        said = brain.reply(system, prompt, [tool.name for tool in tools or []])
        if said[0] == "tool":
            block, stop = ToolCall(f"demo{next(self.ids)}", said[1], said[2]), "tool_use"
        else:
            block, stop = TextBlock(said[1]), "end_turn"
        heard = len(system) + sum(len(message.text()) for message in messages)
        usage = Usage(heard // CHARS_PER_TOKEN + 1, len(str(said[-1])) // CHARS_PER_TOKEN + 1)
        return Reply(Message("assistant", [block]), stop, usage, self.model_id)
