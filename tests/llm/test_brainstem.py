"""The brainstem: a soul's rhythm with no model behind it (host/llm/brainstem.py)."""

from soulstack.llm.brainstem import Brainstem, Situation
from soulstack.llm.types import Message, TextBlock, Tool
from soulstack.soul.prompts import texts

SCHEMA = {"type": "object"}
WORDS = texts("en").TEXT["brainstem"]  # the soul hands the brainstem its words (this seam never imports the soul)


def tools(*names):
    return [Tool(name, name, SCHEMA) for name in names]


async def test_words_are_answered_once_through_the_voice():
    brainstem = Brainstem(lambda: Situation(heard=["hello"], step=1), words=WORDS)
    reply = await brainstem.complete("", [Message.user("snapshot")], tools("speak", "diary", "sleep"))
    speaks = [call for call in reply.message.tool_calls() if call.name == "speak"]
    assert len(speaks) == 1 and "\u201chello\u201d" in speaks[0].input["text"]
    again = await brainstem.complete("", [Message.user("snapshot")], tools("speak", "diary", "sleep"))
    assert not [call for call in again.message.tool_calls() if call.name == "speak"]


async def test_a_body_without_a_voice_gets_the_answer_as_text():
    brainstem = Brainstem(lambda: Situation(heard=["hello"], step=0), words=WORDS)
    reply = await brainstem.complete("", [Message.user("snapshot")], tools("diary", "sleep"))
    first = reply.message.content[0]
    assert isinstance(first, TextBlock) and "\u201chello\u201d" in first.text
    assert [call.name for call in reply.message.tool_calls()] == ["diary", "sleep"]
