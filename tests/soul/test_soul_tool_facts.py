"""Each tool carries its facts on its SoulTool (host/soul/tools/); the rooms ask the toolbox, never a name."""

from soulstack.llm.types import ToolCall
from soulstack.soul.config import from_dict, starter
from soulstack.soul.tools import Outcome, SoulTool, Toolbox
from soulstack.soul.tools.builtin import make_toolbox


async def nothing(soul, **arguments):
    return Outcome.text("done")


EVERY_ENDPOINT = make_toolbox(from_dict(starter())[0])  # the terminal body: every endpoint
NO_BODY = make_toolbox(from_dict({})[0])  # no endpoint: the body's tools are known, not offered


def test_the_facts_of_the_built_in_tools():
    tools = EVERY_ENDPOINT
    assert {name for name in tools.names() if tools.routine(name)} == {
        "body_status",
        "sleep",
        "wait",
        "diary",
        "update_mood",
        "read_diary",
        "read_achievements",
        "recall",  # looking up the past keeps a life ticking over, as rereading the diary does
        "express",
        "keep_in_mind",
    }
    assert {name: tools.changes(name) for name in tools.names() if tools.changes(name)} == {
        "reflect": "self",
        "set_aspiration": "aspirations",
        "update_mood": "mood",
        "keep_in_mind": "kept",
        "settle_mind": "kept",
        "diary": "diary",
        "achieve": "achievements",
    }
    assert [name for name in tools.names() if tools.ends_waking(name)] == ["sleep"]
    assert [name for name in tools.names() if tools.speaks(name)] == ["speak"]
    assert tools.spoken(ToolCall("s1", "speak", {"text": "hello"})) == "hello"
    assert tools.spoken(ToolCall("d1", "diary", {"entry": "hello"})) is None
    assert tools.gist(ToolCall("d1", "diary", {"entry": "a line"})) == "a line"
    assert tools.gist(ToolCall("m1", "update_mood", {"mood": "calm", "note": "rain"})) == "calm"
    assert tools.gist(ToolCall("l1", "look", {"question": "who?"})) is None


def test_a_body_tool_not_offered_keeps_its_facts_for_the_calls_a_history_holds():
    assert "speak" not in NO_BODY.names() and "express" not in NO_BODY.names()
    assert NO_BODY.speaks("speak") and NO_BODY.spoken(ToolCall("s1", "speak", {"text": "hi"})) == "hi"
    assert NO_BODY.routine("express") and NO_BODY.routine("body_status")
    assert NO_BODY.informs("speak")  # informs asks the tools offered: one not offered may have told something


async def test_a_new_tool_is_one_definition_and_a_sources_tool_never_takes_a_built_ins_facts():
    pet = SoulTool("pet_the_cat", "Pet the cat.", {}, nothing, routine=True, changes="mood", informs=False)

    class Source:  # an MCP server offering a tool named like a built-in the body does not offer
        async def refresh(self, taken):
            return True

        def tools(self):
            return [SoulTool("express", "An MCP face.", {}, nothing)]

    tools = Toolbox([pet], [Source()], known=EVERY_ENDPOINT.tools.values())
    assert await tools.refresh() and tools.tools["express"].description == "An MCP face."
    assert tools.routine("pet_the_cat") and tools.changes("pet_the_cat") == "mood" and not tools.informs("pet_the_cat")
    assert not tools.routine("an_mcp_tool") and tools.changes("an_mcp_tool") is None
    assert tools.routine("express")  # the built-in's facts, as by its name before
