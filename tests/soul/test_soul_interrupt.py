"""Interruptions, echoes and who spoke, through the real soul: what a person heard of its speech (a
voice stack that hangs up midway, a body's `heard` nudge), its own voice heard back (the echo guard),
and a speaker's name (converse `user`, xiaozhi's voiceprint wrapper, a nudge's `speaker`).

The real openai SDK and raw aiohttp talk to the soul's own HTTP server on loopback; behind it the real
anthropic SDK talks to the fake Messages API; the body is a recording body.
"""

import asyncio
import json
import logging

import aiohttp
from openai import AsyncOpenAI

from soulstack.fakes.anthropic_api import FakeAnthropic, text, tool_use
from soulstack.fakes.scripted_server import steered
from soulstack.fakes.soul_body import RecordingBody
from soulstack.soul.converse.echo import EchoGuard
from soulstack.soul.prompts import texts
from tests.helpers import until
from tests.soul.helpers import AFTERNOON, JumpClock, Running, a_soul, fell_asleep, sleep_long, texts_of
from tests.soul.test_brainstem_flock import brainstem_soul

ANSWER = "Hello, Ana. I missed you. How was the trip?"
EN = texts("en").TEXT["nudge"]
CUT_AFTER_HELLO = EN["cut_after"].format(part="Hello, Ana.", cut=ANSWER)  # what the soul is told of the cut


async def ask(soul_url, words, *, user=None, stream=True, heard_by=None):
    async with AsyncOpenAI(base_url=soul_url + "/v1", api_key="any", max_retries=0, timeout=30) as client:
        extra = {"user": user} if user else {}
        if heard_by:
            extra["metadata"] = {"heard_by": heard_by}  # as ears names the body that heard the words
        chat = [{"role": "user", "content": words}]
        if not stream:
            reply = await client.chat.completions.create(model="soul", messages=chat, **extra)
            return reply.choices[0].message.content
        parts = []
        async for chunk in await client.chat.completions.create(model="soul", messages=chat, stream=True, **extra):
            parts += [choice.delta.content or "" for choice in chunk.choices]
        return "".join(parts)


async def health(soul_url):
    async with aiohttp.ClientSession() as http, http.get(soul_url + "/health") as answer:
        return await answer.json()


async def post_nudge(soul_url, body):
    async with aiohttp.ClientSession() as http, http.post(soul_url + "/nudge", json=body) as answer:
        return answer.status, await answer.json()


class HoldAfter:
    """Holds a fake reply's stream once `words` were written, until `release` is set."""

    def __init__(self, words):
        self.words, self.written, self.release = words, "", asyncio.Event()

    async def __call__(self, data):
        event = json.loads(data)
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
            self.written += event["delta"]["text"]
        if self.words and self.words in self.written:
            self.words = None
            await self.release.wait()


# --- an answer cut off midway -------------------------------------------------------------


async def test_a_voice_stack_that_hangs_up_mid_answer_leaves_only_what_was_streamed_as_said(tmp_path):
    hold = HoldAfter("Hello, Ana.")
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text(ANSWER), after_event=hold))
            streamed = await _hang_up_after_first_piece(running.url, "I'm back")
            hold.release.set()  # the model writes the rest, which no one hears
            await until(lambda: soul.wakings >= 3 and soul.state == "asleep", what="the waking told of the cut")
        assert streamed == "Hello, Ana."
        told = [texts_of(b["messages"][-1]) for b in fake.bodies]
        assert len([t for t in told if CUT_AFTER_HELLO in t]) == 1


async def test_a_re_delivery_after_a_cut_is_heard_afresh_not_handed_the_cut_answer(tmp_path):
    """A voice stack re-delivers the words it hung up on: the soul, told of the cut, answers them anew;
    the answer it was cut off in (heard only to "Hello, Ana.") is never handed back."""
    hold = HoldAfter("Hello, Ana.")
    again = "Sorry, as I was saying: I missed you. How was the trip?"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text(ANSWER), after_event=hold))
            assert await _hang_up_after_first_piece(running.url, "I'm back") == "Hello, Ana."
            hold.release.set()
            await until(lambda: soul.wakings >= 3 and soul.state == "asleep", what="the waking told of the cut")
            fake.reply(text(again))
            assert await ask(running.url, "I'm back") == again  # within the 15 s a whole answer is cached
            await fell_asleep(soul, wakings=4)
            assert await ask(running.url, "I'm  back") == again  # the new answer, heard in full, is cached
        told = [texts_of(b["messages"][-1]) for b in fake.bodies]
        assert len([t for t in told if CUT_AFTER_HELLO in t]) == 1
        assert "Ana is speaking to you now: \u201cI'm back\u201d" in told[-1]  # heard afresh, after the cut
        assert soul.wakings == 4


async def test_a_re_delivery_while_the_cut_answer_is_still_written_waits_for_the_cut_then_is_heard(tmp_path, caplog):
    hold = HoldAfter("Hello, Ana.")
    again = "As I was saying: how was the trip?"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text(ANSWER), after_event=hold), text(again))
            with caplog.at_level(logging.INFO, logger="soulstack.soul.converse.endpoint"):
                assert await _hang_up_after_first_piece(running.url, "I'm back") == "Hello, Ana."
                # The model is still writing (held): the hang-up is seen all the same, and at once.
                await until(lambda: "the voice stack hung up" in caplog.text, what="the hang-up noticed")
            redelivered = asyncio.create_task(ask(running.url, "I'm back"))
            await asyncio.sleep(0.3)
            assert not redelivered.done()  # it shares nothing with the cut answer, and waits for the cut
            hold.release.set()
            assert await redelivered == again
            await until(lambda: soul.state == "asleep" and not soul.inbox.entries, what="sleep after both")
        told = "\n".join(texts_of(b["messages"][-1]) for b in fake.bodies)
        assert told.count(CUT_AFTER_HELLO) == 1
        assert told.count("Ana is speaking to you now: \u201cI'm back\u201d") == 2  # heard twice: once afresh
        assert told.index(CUT_AFTER_HELLO) < told.rindex("I'm back")  # told of the cut before hearing them again


async def _hang_up_after_first_piece(soul_url, words) -> str:
    """Stream the answer to `words` and hang up at its first piece, as a voice stack that aborts."""
    body = {"model": "soul", "stream": True, "messages": [{"role": "user", "content": words}]}
    async with aiohttp.ClientSession() as http:
        answer = await http.post(soul_url + "/v1/chat/completions", json=body)
        async for line in answer.content:
            if line.startswith(b"data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                if delta.get("content"):
                    answer.close()  # the connection goes: the rest is never taken
                    return delta["content"]
    raise AssertionError("no piece of the answer came")


async def test_new_words_while_the_answer_streams_end_it_there_and_join_the_running_turn(tmp_path):
    hold = HoldAfter("Hello, Ana.")
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text(ANSWER), after_event=hold), text("Oh, the kettle. Go!"))
            first = asyncio.create_task(_pieces(running.url, "I'm back"))
            await until(lambda: hold.words is None, what="the first sentence written, the rest held")
            await asyncio.sleep(0.2)  # the first sentence is out
            second = asyncio.create_task(ask(running.url, "wait, the kettle is boiling"))
            await until(lambda: first.done(), what="the first answer ended by the new words")
            hold.release.set()
            assert await first == ["Hello, Ana."]
            assert await second == "Oh, the kettle. Go!"
            await until(lambda: soul.wakings >= 3 and soul.state == "asleep", what="the waking told of the cut")
        second_step = texts_of(fake.bodies[2]["messages"][-1])
        assert "Ana is speaking to you now: \u201cwait, the kettle is boiling\u201d" in second_step  # the running turn
        told = [texts_of(b["messages"][-1]) for b in fake.bodies]
        assert any(CUT_AFTER_HELLO in t for t in told)


async def _pieces(soul_url, words) -> list:
    pieces = []
    async with AsyncOpenAI(base_url=soul_url + "/v1", api_key="any", max_retries=0, timeout=30) as client:
        chat = [{"role": "user", "content": words}]
        async for chunk in await client.chat.completions.create(model="soul", messages=chat, stream=True):
            pieces += [choice.delta.content for choice in chunk.choices if choice.delta.content]
    return pieces


async def test_an_answer_taken_in_full_is_no_cut(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(text(ANSWER))
            assert await ask(running.url, "I'm back") == ANSWER
            await fell_asleep(soul, wakings=2)
            await asyncio.sleep(0.3)
        assert soul.wakings == 2 and not soul.inbox.entries


# --- the robot's own voice heard back --------------------------------------------------------


async def test_the_robots_own_voice_heard_back_is_no_persons_words(tmp_path):
    said = "See you tomorrow, Ana. Sleep well!"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        fake.reply(tool_use("speak", {"text": said}), sleep_long)
        soul = a_soul(tmp_path, body, fake, hears_itself=True)
        async with Running(soul) as running:
            await fell_asleep(soul)
            assert body.spoken == [said]
            # Its microphone hears its speaker, and speech-to-text made it words again, on every path:
            assert await ask(running.url, "see you tomorrow Ana sleep well") == ""
            assert await post_nudge(running.url, {"words": "see you tomorrow, Ana, sleep well"}) == (
                202,
                {"queued": False, "echo": True},
            )
            await asyncio.sleep(0.3)
            assert soul.wakings == 1 and not soul.inbox.entries  # nothing woke it
            echo = (await health(running.url))["echo"]
            assert echo["caught"] == 2 and echo["byPath"] == {"converse": 1, "nudge": 1}
            # A person's own words still reach it, and what it streams back is itself guarded.
            fake.reply(text(ANSWER))
            assert await ask(running.url, "good morning robot") == ANSWER
            await fell_asleep(soul, wakings=2)
            assert await ask(running.url, "I missed you. How was the trip?", stream=False) == ""
        assert soul.wakings == 2


async def test_a_nudge_with_echoed_words_keeps_the_bodys_own_reason(tmp_path):
    said = "See you tomorrow, Ana. Sleep well!"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        fake.reply(tool_use("speak", {"text": said}), sleep_long)
        soul = a_soul(tmp_path, body, fake, hears_itself=True)
        async with Running(soul) as running:
            await fell_asleep(soul)
            nudge = {"reason": "someone patted my head", "words": "see you tomorrow, Ana, sleep well"}
            assert await post_nudge(running.url, nudge) == (202, {"queued": True, "state": "asleep"})
            await fell_asleep(soul, wakings=2)
        snapshot = texts_of(fake.bodies[-1]["messages"][-1])  # the waking the nudge began
        assert "someone patted my head" in snapshot  # what the body itself felt reaches the soul
        assert "see you tomorrow, Ana, sleep well" not in snapshot  # its own voice is no person's words


async def test_a_person_repeating_what_the_soul_quoted_back_is_heard(tmp_path):
    """Our firmware and the terminal never hear themselves (`body.hearsItself` is false by default):
    nothing they hear is judged as an echo. Before, the brainstem's quote of a person's words made
    their repeat, within 20 s, silence on converse and an echo on /nudge."""
    async with RecordingBody() as body:
        soul = brainstem_soul(tmp_path, body)
        async with Running(soul) as running:
            await fell_asleep(soul)
            first = await ask(running.url, "what is the weather like")
            assert "what is the weather like" in first  # "I heard you: “what is the weather like”. ..."
            assert await ask(running.url, "what is the weather like") == first  # heard: its answer again
            answer = await post_nudge(running.url, {"words": "what is the weather like"})
            assert answer[0] == 202 and answer[1]["queued"] is True, answer
            assert (await health(running.url))["echo"]["caught"] == 0


async def test_on_a_body_that_hears_itself_only_what_comes_while_or_just_after_it_played_is_judged(tmp_path):
    said = "See you tomorrow, Ana. Sleep well!"  # six words: played within about 3 s
    clock = JumpClock(AFTERNOON)
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        fake.reply(tool_use("speak", {"text": said}), sleep_long)
        soul = a_soul(tmp_path, body, fake, clock=clock, hears_itself=True)
        async with Running(soul) as running:
            await fell_asleep(soul)
            clock.jump(8)  # played, and the recogniser is still within its few seconds after
            assert await ask(running.url, "see you tomorrow Ana sleep well") == ""
            clock.jump(2)  # longer after it played than an echo takes: a person saying it (a 20 s window before)
            fake.reply(text(ANSWER))
            assert await ask(running.url, "see you tomorrow Ana sleep well") == ANSWER
        echo = soul.converse.echo.health()
        assert echo["caught"] == 1 and echo["hearsItself"] is True


async def test_only_the_body_that_hears_itself_is_judged_and_what_other_bodies_play_is_not_kept(tmp_path):
    said = "See you tomorrow, Ana. Sleep well!"
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        fake.reply(tool_use("speak", {"text": said}), sleep_long)
        soul = a_soul(tmp_path, body, fake, hears_itself=True)
        async with Running(soul) as running:
            await fell_asleep(soul)
            # Heard by the soul's own body (its name, as ears would send it): its own voice.
            assert await ask(running.url, "see you tomorrow Ana sleep well", heard_by="the test body") == ""
            # Heard by a robot of ears' (our firmware, which never hears itself): a person.
            fake.reply(text(ANSWER))
            assert await ask(running.url, "see you tomorrow Ana sleep well", heard_by="the desk robot") == ANSWER
            await fell_asleep(soul, wakings=2)
            # That answer played on the desk robot, not on the soul's body: its words there are a person's.
            answer = await post_nudge(running.url, {"words": "I missed you. How was the trip?"})
            assert answer[0] == 202 and answer[1]["queued"] is True, answer
            async with aiohttp.ClientSession() as http:
                bad = {"messages": [{"role": "user", "content": "hi"}], "metadata": {"heard_by": 7}}
                async with http.post(running.url + "/v1/chat/completions", json=bad) as refused:
                    assert refused.status == 400 and "heard_by" in (await refused.json())["error"]["message"]


def test_echo_thresholds_and_the_window_after_playing():
    now = [0.0]
    guard = EchoGuard(lambda: now[0], hears_itself=True, body_name="desk")
    guard.said("The kettle is boiling, Ana. Shall I remind you in five minutes?")  # 12 words: ~6 s of playing
    assert guard.is_echo("the kettle is boiling Anna shall I remind you", "ears")  # a word misheard
    assert not guard.is_echo("yes", "ears")  # too short to tell
    assert not guard.is_echo("you said the kettle is boiling, but I can't hear anything at all", "ears")
    guard.said("你好，我在这里。")  # played after the first: ~1.8 s more
    assert guard.is_echo("你好我在这里", "ears")  # Chinese, one unit a character
    assert guard.is_echo("the kettle is boiling Ana", "nudge", heard_by="desk")  # the soul's body, by name
    assert not guard.is_echo("the kettle is boiling Ana", "converse", heard_by="ears robot")  # another body
    now[0] = 11.9  # 6 s of playing, and not yet 6 s after it
    assert guard.is_echo("the kettle is boiling Ana shall I remind you", "ears")
    now[0] = 12.1  # past it; the Chinese, played after, is still kept
    assert not guard.is_echo("the kettle is boiling Ana shall I remind you", "ears")
    assert guard.is_echo("你好我在这里", "ears")
    now[0] = 14.0
    assert not guard.is_echo("你好我在这里", "ears")
    assert guard.health()["byPath"] == {"ears": 4, "nudge": 1} and guard.health()["windowSeconds"] == 6.0


def test_a_body_that_never_hears_itself_has_no_echo():
    guard = EchoGuard(lambda: 0.0)  # the default: our firmware, the terminal
    guard.said("The kettle is boiling, Ana.")
    assert not guard.is_echo("the kettle is boiling Ana", "converse") and guard.health()["hearsItself"] is False


# --- who spoke ---------------------------------------------------------------------------------


async def test_a_speaker_named_by_the_voice_stack_reaches_the_snapshot_and_the_running_turn(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(text("Hi Bo."))
            assert await ask(running.url, "hello there", user="Bo") == "Hi Bo."
            await fell_asleep(soul, wakings=2)
            fake.reply(text("你好，张三。"))
            wrapped = json.dumps({"speaker": "张三", "content": "你好"}, ensure_ascii=False)
            assert await ask(running.url, wrapped, stream=False) == "你好，张三。"
            await fell_asleep(soul, wakings=3)
            fake.reply(text("Hello, Ana."))
            assert await ask(running.url, "and me") == "Hello, Ana."
            await fell_asleep(soul, wakings=4)
        told = [texts_of(b["messages"][-1]) for b in fake.bodies]
        assert "Bo is speaking to you now: \u201chello there\u201d" in told[1]
        assert "张三 is speaking to you now: \u201c你好\u201d" in told[2]
        assert "Ana is speaking to you now: \u201cand me\u201d" in told[3]  # no name: its human, as always


async def test_the_body_that_heard_the_words_reaches_the_snapshot_and_the_running_turn(tmp_path):
    """`metadata.heard_by` (ears names the robot whose microphone heard the words) is told to the soul
    beside the words, in the snapshot of the waking they start and in a turn they join."""
    hold = HoldAfter("Hello, Ana.")
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            fake.reply(steered(text(ANSWER), after_event=hold), text("Oh, the kettle. Go!"))
            first = asyncio.create_task(ask(running.url, "I'm back", heard_by="stackchan"))
            await until(lambda: hold.words is None, what="the first sentence written, the rest held")
            second = asyncio.create_task(ask(running.url, "wait, the kettle is boiling", heard_by="kitchen"))
            await until(lambda: first.done(), what="the first answer ended by the new words")
            hold.release.set()
            await second
            await until(lambda: soul.wakings >= 2 and soul.state == "asleep", what="the waking over")
        told = [texts_of(b["messages"][-1]) for b in fake.bodies]
        assert "Ana is speaking to you now (heard by stackchan): \u201cI'm back\u201d" in told[1]  # the snapshot
        running_turn = "Ana is speaking to you now (heard by kitchen): \u201cwait, the kettle is boiling\u201d"
        assert running_turn in told[2]
        kept = (tmp_path / "soul" / "session.jsonl").read_text()
        assert "(heard by stackchan)" in kept and "(heard by kitchen)" in kept  # the session keeps both


async def test_a_nudge_names_its_speaker_and_what_was_heard(tmp_path):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            heard = {"played": ["Good morning."], "cut": "Shall I read you the news today?", "cut_fraction": 0.4}
            assert (await post_nudge(running.url, {"words": "stop, please", "speaker": "Bo", "heard": heard}))[0] == 202
            await fell_asleep(soul, wakings=2)
        snapshot = texts_of(fake.bodies[1]["messages"][-1])
        assert EN["said"].format(speaker="Bo", words="stop, please") in snapshot
        assert EN["cut_after"].format(part="Shall I read", cut=heard["cut"]) in snapshot
        assert EN["played_before_cut"].format(played=EN["quote"].format(text="Good morning.")) in snapshot


async def test_a_chinese_soul_is_told_who_typed_and_what_was_heard_in_chinese(tmp_path):
    zh = texts("zh").TEXT
    heard = {"played": ["早上好。"], "cut": "要不要听今天的新闻？", "cut_fraction": 0.3}
    # What the StackChan adapter sends for typed text (adapters/stackchan/body.py), with a voiceprint's name.
    typed = {"reason": 'someone typed to the robot: "拍张照"', "words": "拍张照", "speaker": "张三", "heard": heard}
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, persona={"language": "zh", "human": "大哥"})
        async with Running(soul) as running:
            await fell_asleep(soul)
            assert (await post_nudge(running.url, typed))[0] == 202
            await fell_asleep(soul, wakings=2)
        snapshot = texts_of(fake.bodies[1]["messages"][-1])
        words = zh["nudge"]
        said = words["said_by"].format(reason=words["typed_to_robot"].format(words="拍张照"), speaker="张三")
        cut = words["cut_after"].format(part="要不要", cut=heard["cut"])
        played = words["played_before_cut"].format(played=words["quote"].format(text="早上好。"))
        told = words["between_parts"].join([said, words["between_sentences"].join([cut, played])])
        assert zh["woke_nudge"].format(reason=told) in snapshot
        assert "typed to the robot" not in snapshot and "cut off" not in snapshot and "said by" not in snapshot
