"""Earlier wakings' routine calls are shown settled, one line each; the session keeps them as they were.

The rule on hand-made histories (host/soul/memory/settle.py), then over the real loop and the real
anthropic SDK against host/fakes/anthropic_api.py on a StepClock: what the model is sent, what
the cache reads and writes from waking to waking, and that a restarted process sends the same
bytes from the session on disk.
"""

import json
from datetime import datetime, UTC

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import FakeAnthropic, message, tool_use
from soulstack.fakes.soul_body import RecordingBody
from soulstack.llm.types import Message, TextBlock, ThinkingBlock, ToolCall, ToolResult
from soulstack.soul.run import build_soul
from soulstack.soul.config import from_dict, starter
from soulstack.soul.memory.settle import settle_earlier_calls
from soulstack.soul.prompts import texts
from soulstack.soul.tools.builtin import make_toolbox
from tests.helpers import until
from tests.soul.helpers import Running, anthropic_env, cfg_for, same_prefix, tokens_to_last_breakpoint

AFTERNOON = datetime(2024, 5, 1, 14, 0, tzinfo=UTC)
# A soul's tools and their facts (host/soul/tools/): the config `soulstack soul --init` writes (every body endpoint).
TOOLS = make_toolbox(from_dict(starter())[0])


def said(words: str, *results) -> Message:
    return Message("user", list(results) + [TextBlock(words)])


def result(call_id: str, words: str, is_error: bool = False) -> ToolResult:
    return ToolResult(call_id, [TextBlock(words)], is_error)


def test_an_earlier_wakings_routine_calls_become_one_line_each_and_this_waking_stays_as_it_is():
    history = [
        said("It is 14:00, your local time."),
        Message(
            "assistant",
            [
                TextBlock("The light moved."),
                ToolCall("c1", "diary", {"entry": "Light on the desk."}),
                ToolCall("c2", "sleep", {"minutes": 30}),
            ],
        ),
        said(
            "It is 14:30, your local time.",
            result("c1", "Written in your diary."),
            result("c2", "You will sleep 30 minutes."),
        ),
        Message("assistant", [ToolCall("c3", "diary", {"entry": "Still light."})]),
        Message("user", [result("c3", "Written in your diary.")]),
    ]
    before = json.dumps([m.to_json() for m in history])
    shown = settle_earlier_calls(history, 2, {0, 2}, TOOLS, texts("en"))
    assert [m.to_json() for m in shown] == [
        history[0].to_json(),
        {"role": "assistant", "content": [{"type": "text", "text": "The light moved."}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": 'What you did then:\n- diary: "Light on the desk." \u2192 Written in your diary.\n'
                    "- sleep: 30 \u2192 You will sleep 30 minutes.",
                },
                {"type": "text", "text": "It is 14:30, your local time."},
            ],
        },
        history[3].to_json(),  # this waking's call and its answer: as they were
        history[4].to_json(),
    ]
    assert shown[3] is history[3] and shown[4] is history[4]
    assert json.dumps([m.to_json() for m in history]) == before  # the history itself is not touched
    assert settle_earlier_calls(history, 2, {0, 2}, TOOLS, texts("en")) == shown  # the same history, the same view


def test_a_reply_answered_within_its_own_waking_stays_as_it_was():
    history = [
        said("It is 14:00, your local time."),
        Message("assistant", [ToolCall("d1", "diary", {"entry": "First."})]),  # sent again within the waking
        Message("user", [result("d1", "Written in your diary.")]),
        Message("assistant", [ToolCall("s1", "sleep", {"minutes": 20})]),  # the reply that ended it
        said("It is 14:20, your local time.", result("s1", "You will sleep 20 minutes.")),
    ]
    shown = settle_earlier_calls(history, 4, {0, 4}, TOOLS, texts("en"))
    assert shown[:3] == history[:3] and all(a is b for a, b in zip(shown, history[:3], strict=False))
    assert [m.to_json() for m in shown[3:]] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What you did then:\n- sleep: 20 \u2192 You will sleep 20 minutes."},
                {"type": "text", "text": "It is 14:20, your local time."},
            ],
        }
    ]  # the sleep-only reply is gone


def test_the_last_reply_of_a_waking_that_did_not_sleep_stays_as_it_was():
    # The process was killed while the model answered the step after this reply: it was sent as it was.
    history = [
        said("It is 14:00, your local time."),
        Message("assistant", [ToolCall("d1", "diary", {"entry": "Before the crash."})]),
        Message("user", [result("d1", "Written in your diary.")]),
        said("It is 14:05, your local time. You have just started."),
    ]
    assert settle_earlier_calls(history, 3, {0, 3}, TOOLS, texts("en")) == history


def test_a_call_that_informs_or_failed_keeps_its_shape_and_thinking_goes_with_settled_calls():
    history = [
        said("It is 14:00, your local time."),
        Message(
            "assistant",
            [
                ThinkingBlock("Rest soon.", signature="sig"),
                TextBlock("Once more."),
                ToolCall("look1", "look", {"question": "who is there?"}),
                ToolCall("say1", "speak", {"text": "Hello?"}),
                ToolCall("note1", "diary", {"entry": "I said hello."}),
                ToolCall("rest1", "sleep", {"minutes": 20}),
            ],
        ),
        said(
            "It is 14:20, your local time.",
            result("look1", "[an image you saw earlier; no longer kept]"),
            result("say1", "the body is offline", is_error=True),
            result("note1", "Written in your diary."),
            result("rest1", "You will sleep 20 minutes."),
        ),
    ]
    shown = settle_earlier_calls(history, 2, {0, 2}, TOOLS, texts("en"))
    assert [m.to_json() for m in shown[1:]] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Once more."},
                {"type": "tool_call", "id": "look1", "name": "look", "input": {"question": "who is there?"}},
                {"type": "tool_call", "id": "say1", "name": "speak", "input": {"text": "Hello?"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_call_id": "look1",
                    "is_error": False,
                    "content": [{"type": "text", "text": "[an image you saw earlier; no longer kept]"}],
                },
                {
                    "type": "tool_result",
                    "tool_call_id": "say1",
                    "is_error": True,
                    "content": [{"type": "text", "text": "the body is offline"}],
                },
                {
                    "type": "text",
                    "text": 'What you did then:\n- diary: "I said hello." \u2192 Written in your diary.\n'
                    "- sleep: 20 \u2192 You will sleep 20 minutes.",
                },
                {"type": "text", "text": "It is 14:20, your local time."},
            ],
        },
    ]


def test_several_arguments_are_named_a_long_one_is_cut_and_the_header_speaks_the_souls_language():
    long_self = "I am Pip. " * 100
    history = [
        said("现在是14:00。"),
        Message(
            "assistant",
            [
                ToolCall("m1", "update_mood", {"mood": "calm", "note": "a slow hour"}),
                ToolCall("r1", "reflect", {"content": long_self}),
                ToolCall("k1", "keep_in_mind", {}),
                ToolCall("s1", "sleep", {"minutes": 30}),
            ],
        ),
        Message(
            "user",
            [
                result("m1", "Mood noted."),
                result("r1", "SELF.md rewritten."),
                ToolResult("k1", []),
                result("s1", "你会睡30分钟。"),
            ],
        ),
        said("现在是14:30。"),
    ]
    lines = settle_earlier_calls(history, 3, {0, 3}, TOOLS, texts("zh"))[1].content[0].text.split("\n")
    assert lines[0] == "你当时做了："
    assert lines[1] == '- update_mood: mood="calm", note="a slow hour" \u2192 Mood noted.'
    assert lines[2].startswith('- reflect: "I am Pip. I am Pip.') and lines[2].endswith(
        "\u2026 \u2192 SELF.md rewritten."
    )
    assert len(lines[2]) < 450
    assert lines[3] == "- keep_in_mind"  # no arguments, an answer without words
    assert lines[4] == "- sleep: 30 \u2192 你会睡30分钟。"


def test_reused_call_ids_settle_only_the_answer_right_after_their_call():
    history = [
        said("night one"),
        Message(
            "assistant", [ToolCall("keep1", "diary", {"entry": "One."}), ToolCall("rest", "sleep", {"minutes": 9})]
        ),
        Message("user", [result("keep1", "Written in your diary."), result("rest", "You will sleep 9 minutes.")]),
        said("night two"),
        Message(
            "assistant", [ToolCall("keep1", "diary", {"entry": "Two."}), ToolCall("rest", "sleep", {"minutes": 9})]
        ),
        Message("user", [result("keep1", "Written in your diary."), result("rest", "You will sleep 9 minutes.")]),
    ]
    shown = settle_earlier_calls(history, 3, {0, 3}, TOOLS, texts("en"))
    assert shown[-2:] == history[-2:]
    assert "One." in shown[1].content[0].text


# --- over the real loop ---------------------------------------------------------------------------


async def test_the_model_sees_earlier_wakings_settled_and_reads_them_from_the_cache(tmp_path):
    clock = StepClock(AFTERNOON)
    clock.hold(after=2)  # three wakings, then held in the third sleep
    async with RecordingBody() as body, FakeAnthropic(clock=clock.monotonic) as fake:
        fake.reply(
            tool_use("look", {"question": "what is around me?"}, text="Let me see."),  # waking 1: a look, then
            message(
                {"type": "text", "text": "A quiet desk."},  # a diary line and the sleep in one reply
                {"type": "tool_use", "id": "toolu_d1", "name": "diary", "input": {"entry": "A quiet desk."}},
                {"type": "tool_use", "id": "toolu_s1", "name": "sleep", "input": {"minutes": 30}},
            ),
            message(
                {"type": "tool_use", "id": "toolu_m2", "name": "update_mood", "input": {"mood": "calm"}},  # waking 2
                {"type": "tool_use", "id": "toolu_s2", "name": "sleep", "input": {"minutes": 30}},
            ),
            tool_use("sleep", {"minutes": 30}),  # waking 3
        )
        cfg = cfg_for(tmp_path, body)
        soul = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(soul):
            await until(lambda: clock.held == 3, what="three wakings")
        soul.session.close()
        assert len(fake.bodies) == 4  # waking 1: 0 look, 1 diary + sleep; waking 2: 2; waking 3: 3
        look_waking, second, third = fake.bodies[1], fake.bodies[2], fake.bodies[3]
        # Waking 2 sees waking 1's look as it was (its answer informs), its diary line and sleep settled.
        seen = "\n".join(b["text"] for m in second["messages"] for b in m["content"] if b["type"] == "text")
        assert [b["name"] for m in second["messages"] for b in m["content"] if b["type"] == "tool_use"] == ["look"]
        assert (
            'What you did then:\n- diary: "A quiet desk." \u2192 Written in your diary.\n'
            "- sleep: 30 \u2192 You will sleep 30 minutes."
        ) in seen
        assert "A quiet desk." in seen and "Let me see." in seen  # the thoughts stay word for word
        # Nothing that was sent before changed: waking 2 reads all that waking 1's look call wrote,
        # and writes only what is new (the settled reply, the snapshot); waking 3 reads all of waking 2's.
        assert same_prefix(look_waking, second) and same_prefix(second, third)
        assert fake.usages[2]["cache_read_input_tokens"] == tokens_to_last_breakpoint(look_waking)
        assert fake.usages[3]["cache_read_input_tokens"] == tokens_to_last_breakpoint(second)
        assert not [
            b for m in third["messages"] for b in m["content"] if b["type"] == "tool_use" and b["name"] != "look"
        ]
        # Waking 2's reply had no words: it is left out. Its settled lines open the message that holds
        # waking 3's snapshot, right after the one waking 2's snapshot ended (the API takes neighbouring
        # user messages as one turn), so what waking 2 cached stays where it was.
        assert [m["role"] for m in third["messages"][-3:]] == ["assistant", "user", "user"]
        assert [b["text"].split("\n")[0] for b in third["messages"][-1]["content"]] == [
            "What you did then:",
            "It is 15:00, your local time.",
        ]
        assert '- update_mood: "calm" \u2192' in third["messages"][-1]["content"][0]["text"]
        # The session on disk keeps every call as it was.
        kept = (tmp_path / "soul" / "session.jsonl").read_text()
        for call_id in ("toolu_d1", "toolu_s1", "toolu_m2", "toolu_s2"):
            assert f'"id": "{call_id}"' in kept and f'"tool_call_id": "{call_id}"' in kept

        # A restarted process sends the same bytes for the same past: its first call reads it all.
        clock.hold()  # the restarted soul's first waking, then held in its sleep
        fake.reply(tool_use("sleep", {"minutes": 30}))
        again = build_soul(cfg, clock=clock, env=anthropic_env(fake))
        async with Running(again):
            await until(lambda: clock.held == 4, what="a waking after the restart")
        again.session.close()
        assert len(fake.bodies) == 5
        assert same_prefix(third, fake.bodies[4])
        assert fake.usages[4]["cache_read_input_tokens"] == tokens_to_last_breakpoint(third)
