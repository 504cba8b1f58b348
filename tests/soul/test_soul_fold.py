"""The context ceiling: folds keep tool pairs whole, respect both limits, survive a restart,
and what is left is a history the Messages API accepts (checked against the protocol-true fake)."""

import base64
from datetime import datetime, UTC

import pytest

from soulstack.llm.anthropic import AnthropicModel
from soulstack.llm.types import ImageBlock, Message, TextBlock, ToolCall, ToolResult
from soulstack.soul.memory.fold import (
    IMAGE_TOKENS,
    choose_cut,
    clean_boundaries,
    estimate_tokens,
    fold_context,
    plain_digest,
    strip_old_images,
    summary_request,
    with_summary,
)
from soulstack.soul.config import from_dict, starter
from soulstack.soul.memory.session import Session, coalesce
from soulstack.soul.tools.builtin import make_toolbox
from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.soul.prompts import texts

ENGLISH = texts("en")  # the soul's words in English (host/soul/prompts/en.py)
EN = ENGLISH.TEXT
# A soul's tools and their facts (host/soul/tools/): the config `soulstack soul --init` writes (every body endpoint).
TOOLS = make_toolbox(from_dict(starter())[0])

NOW = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 64).decode()


def waking(n, pad=2000, image=True):
    """One waking as the soul's session holds it: snapshot, look (with an image), speak, sleep."""
    look = [ImageBlock(JPEG), TextBlock("a desk, a lamp")] if image else [TextBlock("a desk, a lamp")]
    return [
        Message.user(f"Waking {n}. It is morning. " + "x" * pad),
        Message(
            "assistant",
            [TextBlock(f"Let me look around ({n})."), ToolCall(f"look{n}", "look", {"question": "who is there?"})],
        ),
        Message("user", [ToolResult(f"look{n}", look)]),
        Message(
            "assistant",
            [
                ToolCall(f"speak{n}", "speak", {"text": f"Good morning, number {n}!"}),
                ToolCall(f"diary{n}", "diary", {"entry": f"Day {n}: I greeted the lamp."}),
            ],
        ),
        Message(
            "user", [ToolResult(f"speak{n}", [TextBlock("spoken")]), ToolResult(f"diary{n}", [TextBlock("written")])]
        ),
        Message("assistant", [ToolCall(f"sleep{n}", "sleep", {"minutes": 20})]),
        Message("user", [ToolResult(f"sleep{n}", [TextBlock("sleeping 20 minutes")])]),
    ]


def life(wakings, **options):
    return [message for n in range(wakings) for message in waking(n, **options)]


def assert_pairs_whole(messages):
    """Every tool result answers a call in the assistant message just before it (after merging turns)."""
    merged = coalesce(messages)
    assert merged[0].role == "user"
    assert not any(isinstance(b, ToolResult) for b in merged[0].content)
    for before, message in zip(merged, merged[1:], strict=False):
        results = {b.tool_call_id for b in message.content if isinstance(b, ToolResult)}
        calls = {c.id for c in before.tool_calls()} if before.role == "assistant" else set()
        assert results <= calls
        assert calls <= results if message.role == "user" else not calls


class Recorder:
    def __init__(self, answer="I lived many mornings and greeted the lamp."):
        self.seen = []
        self.answer = answer

    async def __call__(self, messages):
        self.seen.append(messages)
        return self.answer


def test_estimate_counts_chars_over_four_images_and_framing():
    text = Message.user("a" * 400)
    assert estimate_tokens([text]) == 100 + 4
    with_image = Message("user", [ToolResult("t", [ImageBlock(JPEG * 100), TextBlock("b" * 8)])])
    assert estimate_tokens([with_image]) == 2 + IMAGE_TOKENS + 4  # base64 size does not matter
    call = Message("assistant", [ToolCall("t", "look", {"q": "?"})])
    assert estimate_tokens([call]) == -(-(4 + len('{"q": "?"}')) // 4) + 4


def test_clean_boundaries_are_the_snapshots():
    messages = life(3)
    assert clean_boundaries(messages) == [7, 14]


def test_words_arriving_while_a_tool_runs_are_not_a_boundary():
    # the human spoke while `look` was running: their words sit between the call and its result
    messages = waking(0) + [
        Message.user("Waking 1."),
        Message("assistant", [ToolCall("look1", "look", {"question": "?"})]),
        Message.user("your human typed: hello!"),
        Message("user", [ToolResult("look1", [TextBlock("a face")])]),
        Message("assistant", [TextBlock("Hello!")]),
    ]
    assert clean_boundaries(messages) == [7]
    assert choose_cut(messages, 1) == 7


def test_a_merged_snapshot_with_tool_results_is_not_a_boundary():
    messages = coalesce(life(3))  # sleep results and the next snapshot share one user message
    assert clean_boundaries(messages) == []
    assert choose_cut(messages, 100) is None


async def test_no_fold_under_the_ceiling():
    messages = life(3)
    assert await fold_context(messages, Recorder(), ENGLISH, max_context_tokens=estimate_tokens(messages)) is None


async def test_fold_respects_both_limits_and_keeps_tool_pairs():
    messages = life(60)  # ~60 * 2.5k tokens
    total = estimate_tokens(messages)
    assert total > 100_000
    summarize = Recorder()
    fold = await fold_context(messages, summarize, ENGLISH, now=NOW)
    assert fold is not None
    kept_tokens = estimate_tokens(fold.kept)
    assert kept_tokens <= 20_000
    # ...and it kept as much as fits: one more waking would not have
    assert kept_tokens + estimate_tokens(waking(0)) > 20_000
    assert fold.record["tokensAfter"] < 100_000
    assert fold.record["upto"] + len(fold.kept) == len(messages)
    assert fold.kept == messages[fold.record["upto"] :]  # verbatim
    assert fold.record["type"] == "fold" and fold.record["summary"] == summarize.answer
    assert fold.record["at"] == NOW.isoformat()
    assert summarize.seen == [messages[: fold.record["upto"]]]
    assert_pairs_whole(fold.messages)
    assert fold.messages[0].content[0].text == f"{EN['summary_header']}\n{summarize.answer}"
    assert fold.messages[1:] == fold.kept[1:]


async def test_extra_tokens_for_system_and_tools_count_toward_the_ceiling():
    messages = life(10)
    size = estimate_tokens(messages)
    limits = {"max_context_tokens": size + 100, "keep_recent_tokens": 5000}
    assert await fold_context(messages, Recorder(), ENGLISH, **limits) is None
    assert await fold_context(messages, Recorder(), ENGLISH, **limits, extra_tokens=200) is not None


async def test_a_huge_current_waking_is_kept_whole():
    messages = life(5) + waking(99, pad=200_000)
    fold = await fold_context(messages, Recorder(), ENGLISH, max_context_tokens=10_000, keep_recent_tokens=1000)
    assert fold.record["upto"] == 35  # only the newest waking remains, split nowhere
    assert_pairs_whole(fold.messages)


async def test_second_fold_carries_the_first_summary_and_counts_from_the_session_start():
    messages = life(60)
    first = await fold_context(
        messages, Recorder("FIRST"), ENGLISH, max_context_tokens=50_000, keep_recent_tokens=40_000
    )
    live = first.kept + life(30)
    second_summarizer = Recorder("SECOND")
    second = await fold_context(
        live,
        second_summarizer,
        ENGLISH,
        max_context_tokens=50_000,
        keep_recent_tokens=10_000,
        previous_summary="FIRST",
        base=first.record["upto"],
    )
    folded_seen = second_summarizer.seen[0]
    assert "FIRST" in folded_seen[0].content[0].text  # the older summary is folded in, not lost
    assert second.record["upto"] == first.record["upto"] + second.record["folded"]
    assert second.messages[0].content[0].text.endswith("SECOND")


async def test_fold_and_restart_keep_the_summary(tmp_path):
    session = Session(tmp_path / "session.jsonl").load()
    for message in life(50):
        session.append(message)
    fold = await fold_context(
        session.messages[session.fold_upto :], Recorder(), ENGLISH, base=session.fold_upto, now=NOW
    )
    session.append_fold(fold.record["summary"], fold.record["upto"], fold.record["at"])
    session.close()

    again = Session(tmp_path / "session.jsonl").load()
    assert again.fold_summary == fold.record["summary"]
    rebuilt = with_summary(again.history(), again.fold_summary, ENGLISH)
    assert rebuilt == coalesce(fold.messages)


async def test_the_folded_history_and_the_summary_request_are_accepted_by_the_api():
    messages = life(60)
    async with FakeAnthropic(default="Summary: many mornings, one lamp.") as fake:
        model = AnthropicModel("claude-sonnet-5-5", api_key="test", base_url=fake.base_url)

        async def summarize(folded):
            request = summary_request(folded, EN["summary_instruction"])
            reply = await model.complete("You are Pip.", request, max_tokens=800)
            return reply.message.text()

        fold = await fold_context(messages, summarize, ENGLISH)
        await model.complete("You are Pip.", fold.messages + [Message.user("next snapshot")], cache=True)
        assert fake.usages[0] is not None and fake.usages[1] is not None  # both requests were valid
        assert fold.record["summary"] == "Summary: many mornings, one lamp."
        assert fake.bodies[0]["messages"][-1]["content"][-1]["text"].startswith("Your memory is getting too long")


def test_summary_request_ends_with_one_instruction_in_a_user_turn():
    folded = life(2)
    request = summary_request(folded, texts("zh").TEXT["summary_instruction"])
    assert len(request) == len(folded)
    assert request[-1].role == "user" and "摘要" in request[-1].content[-1].text
    ends_with_assistant = folded[:-1]
    assert summary_request(ends_with_assistant, EN["summary_instruction"])[-1].role == "user"


async def test_brainstem_digest_fold():
    messages = life(60)

    async def digest_summarize(folded):  # the brainstem's summarizer: a plain digest, no model
        return plain_digest(folded, ENGLISH, TOOLS)

    fold = await fold_context(messages, digest_summarize, ENGLISH)
    digest = fold.record["summary"]
    assert digest.startswith(f"{fold.record['upto'] // 7} wakings folded; tools used: diary x")
    assert "look x" in digest and "sleep x" in digest
    assert 'said: "Good morning, number' in digest
    assert len(digest) <= 2000
    # the newest deeds are the ones kept when there is too much to list
    last_folded = fold.record["upto"] // 7 - 1
    assert f"number {last_folded}!" in digest


def test_digest_carries_an_earlier_summary():
    messages = with_summary(life(2), "I met a cat on Tuesday.", ENGLISH)
    digest = plain_digest(messages, ENGLISH, TOOLS)
    assert digest.splitlines()[0] == "I met a cat on Tuesday."
    assert "2 wakings folded" in digest


def test_strip_old_images_keeps_the_current_waking():
    messages = life(3)
    stripped = strip_old_images(messages, 14, ENGLISH)
    old = [b for m in stripped[:14] for r in m.content if isinstance(r, ToolResult) for b in r.content]
    assert not any(isinstance(b, ImageBlock) for b in old)
    assert sum(isinstance(b, TextBlock) and b.text == EN["image_gone"] for b in old) == 2
    assert stripped[14:] == messages[14:]
    assert isinstance(stripped[16].content[0].content[0], ImageBlock)
    assert messages[2].content[0].content[0] == ImageBlock(JPEG)  # the original is untouched
    assert strip_old_images(messages, 14, ENGLISH) == stripped  # same bytes every time, for the cache
    assert estimate_tokens(stripped) < estimate_tokens(messages) - 2 * IMAGE_TOKENS + 100


def test_strip_old_images_top_level_image_block():
    messages = [
        Message("user", [TextBlock("look"), ImageBlock(JPEG)]),
        Message("assistant", [TextBlock("ok")]),
        Message.user("now"),
    ]
    stripped = strip_old_images(messages, 2, ENGLISH)
    assert stripped[0].content == [TextBlock("look"), TextBlock(EN["image_gone"])]


@pytest.mark.parametrize("keep", [500, 5000, 20_000])
def test_choose_cut_is_always_a_clean_boundary(keep):
    messages = life(20)
    cut = choose_cut(messages, keep)
    assert cut in clean_boundaries(messages)
    assert_pairs_whole(messages[cut:])
