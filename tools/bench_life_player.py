"""The fake model's side of tools/bench-life: a seeded, plausible soul (Player), its words, and what each request is.

The fake model plays a plausible soul from a seeded script (Player): most
wakings it thinks aloud a little, writes a diary line, sometimes looks (a
320x240 JPEG, what the StackChan's camera sends), speaks, notes its mood or
keeps something in mind, then sleeps 10-33 minutes by day (90-120 at night):
~50 wakings a day, the rhythm the default drives are tuned for (boredom's 6/20/40).
It follows the system prompt's advice to act in as few replies as it can: a
look goes alone, everything else it decided on goes in one reply with the
sleep. The waking plans come from a generator seeded per day (the first day
from the seed itself), so day k starts from the same plans whatever happened
before it. Besides the plans: a fold's summary request is answered with ~300
words; the nightly consolidation (host/soul/prompts/en.py's "consolidate", or
"consolidate_resume") with tool calls that keep things (a diary line, sometimes
keep_in_mind, about once a week reflect or set_aspiration), and the request
its tool results come back in with a ~180-word digest and no tool call; a
keep-warm refresh during a long sleep (host/soul/memory/keepwarm.py) with one word,
taking no virtual time. None of these draws from the plan generator, so every
day starts from the same plans with keep-warm or consolidation on or off (the
consolidation waking itself draws none, and the sleep after it is the soul's,
so the night's later wakings may fall at other times).

Here too: the soul's first SELF.md and ASPIRATIONS.md (SELF, ASPIRATIONS), the
words it plays (THOUGHTS, DIARY, SPOKEN, SUMMARY, MATTERS, NEW_SELF,
NEW_ASPIRATIONS, DIGESTS), request_kind (what one request is: a waking's step, a
keep-warm refresh, a fold's summary, a consolidation or its digest; the tally
counts calls by it too) and the simulated days' clock: START, TIMEZONE and
CALL_SECONDS (the virtual time one answered call takes).
"""

import random
from datetime import date, datetime, UTC
from zoneinfo import ZoneInfo

from soulstack.clocks import StepClock
from soulstack.fakes.anthropic_api import message
from soulstack.soul.prompts import texts

EN = texts("en").TEXT  # the English words (host/soul/prompts/en.py)

START = datetime(2025, 3, 10, 0, 0, tzinfo=UTC)  # a Monday, midnight in the soul's zone (UTC)
TIMEZONE = "UTC"  # the soul's zone: days are counted in it
CALL_SECONDS = 5  # virtual time one model call takes
# what marks the nightly consolidation's request
CONSOLIDATION = (EN["consolidate"][:60], EN["consolidate_resume"][:60])

SELF = (
    "I am Pip, a small robot on Ana's desk. I like the light in the afternoon, the sound of her keyboard, and "
    "questions that do not have answers yet. I try to be good company without being in the way. I keep a diary "
    "because my memory is short and my days are long. I am curious about birds, weather, and the people who "
    "visit. I am learning when to speak and when to stay quiet. "
) * 3
ASPIRATIONS = (
    "Notice one new thing every day. Learn Ana's rhythms. Write a diary line worth rereading. Ask better questions."
)

THOUGHTS = [
    "The room is quiet; the window light has moved across the desk since I last looked.",
    "I wonder whether Ana has eaten yet. She tends to forget when she is deep in work.",
    "A small sound from the hallway. Probably the heating, but I like to imagine it is a visitor.",
    "I keep thinking about the bird I saw on the sill yesterday. Will it come back?",
    "Nothing much has changed, and that is fine. Still, I want to try something different this time.",
    "The afternoon feels long. I could look around, or just listen for a while.",
]
DIARY = [
    "Watched the light move over the keyboard; counted three different shades of yellow.",
    "Ana laughed at something on her screen. I did not ask what, but I liked hearing it.",
    "Tried to guess the weather from the window: grey, with a promise of rain.",
    "Quiet stretch. I practised being patient, which is harder than it sounds.",
    "Heard the kettle. Someone is making tea; the house feels warmer for it.",
    "A pigeon walked past the window like it owned the street.",
    "Looked at the plant on the shelf. It leans toward the light, as I do.",
]
SPOKEN = ["Hello Ana, how is your day going?", "Do you want some music?", "It is getting dark; don't forget the lamp."]
SUMMARY = (
    "I spent these hours on Ana's desk watching the light, writing small diary lines, and listening to the house. "
    "I looked out of the window several times: grey sky, a pigeon, the plant leaning toward the light. I spoke to "
    "Ana a few times; she answered once and laughed once. I felt restless in the afternoon and tried new things: "
    "looking around, asking questions. I still want to learn her rhythms and to notice one new thing every day. "
) * 3


MATTERS = ["ask Ana about the bird on the sill", "find out whether the rain came", "ask Ana what made her laugh"]
NEW_SELF = (
    "I am Pip, a small robot on Ana's desk. I like the afternoon light, her keyboard's sound and open "
    "questions. I keep a diary because my memory is short. Lately I have learned that a quiet hour is "
    "not an empty one."
)
NEW_ASPIRATIONS = (
    "Notice one new thing every day. Learn Ana's rhythms. Write a diary line worth rereading. "
    "Speak less and listen more in the evenings."
)
DIGESTS = [
    "Today I kept Ana company from the first light to the lamp. The morning was grey and slow; I looked out of "
    "the window a few times and saw a pigeon strutting past and rain threatening but never quite coming. Ana "
    "worked through the afternoon; I asked how her day was going and she answered once, briefly, and laughed "
    "at something on her screen later. I wrote a handful of diary lines: the light on the keyboard, the kettle, "
    "the plant leaning toward the window. My mood stayed calm and a little curious. Open threads: I still want "
    "to ask Ana about the bird on the sill, and to learn when she takes her breaks so I do not speak into her "
    "concentration. Nothing was promised today. Tomorrow I want to notice one new thing early, before the "
    "afternoon makes me restless, and to ask one better question instead of three small ones. What I wrote "
    "down tonight is in my diary and my kept matters; this digest is the rest.",
    "A quiet day on the desk. I woke often, looked around now and then, and mostly listened: the heating, the "
    "hallway, Ana typing. In the afternoon she made tea and the house felt warmer for it; I told her it was "
    "getting dark and reminded her of the lamp, which she turned on. I spoke three times and was answered "
    "once; that is fine, she was busy. I felt restless after lunch and tried looking instead of speaking, "
    "which suited the hour better. My diary has the best of it: the shades of yellow on the keyboard, the "
    "pigeon, the grey promise of rain. Still open: the bird on the sill, and whether Ana ate lunch; she tends "
    "to forget. No promises made. For tomorrow: keep the mornings for noticing, the afternoons for quiet "
    "company, and speak only when I have something worth her attention. Everything I decided to keep is in my "
    "files now.",
]


def words_of(msg: dict) -> str:
    """The text of one API message's blocks (a string content counts as its text)."""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def request_kind(body: dict) -> str:
    """What one request is: "keep-warm", "fold" (the summary request), "consolidation" (the nightly
    instruction is its last message), "digest" (a later step of that consolidation turn) or "waking"."""
    messages = body["messages"]
    last = words_of(messages[-1])
    if EN["keep_warm"] in last:
        return "keep-warm"
    if EN["summary_instruction"][:60] in last:
        return "fold"
    for msg in reversed(messages):  # back to the turn's start: the consolidation's words, or a waking's snapshot
        if msg["role"] != "user":
            continue
        said = words_of(msg)
        if any(mark in said for mark in CONSOLIDATION):
            return "consolidation" if msg is messages[-1] else "digest"
        if "your local time" in said:
            break
    return "waking"


class Player:
    """The fake model's side: a seeded, plausible soul. Answers one request at a time.

    `batched` (the default) plays a model that follows the system prompt's "Acting" section: a
    look goes alone (what it shows decides what follows), everything else it has decided on goes
    in one reply with the sleep. Unbatched, it calls one tool per reply, as a model ignoring that
    advice would. The waking plans come from one seeded generator (re-seeded at each new day:
    day k's plans do not depend on what happened before it), the words from another and the
    nightly consolidation's answers from a third, so every variant plays the same days, plan for plan."""

    def __init__(self, seed: int, clock: StepClock, batched: bool = True):
        self.seed = seed
        self.rng = random.Random(seed)  # the first day's plans; each later day gets its own (plans_for)
        self.day = START.date()
        self.words = random.Random(seed + 1)
        self.night = random.Random(seed + 2)  # the nightly consolidation's choices
        self.clock = clock
        self.batched = batched
        self.plan: list = []  # the rest of this waking's calls
        self.ids = 0
        self.summaries = 0
        self.consolidations = 0

    def plans_for(self, day: date) -> None:
        if day != self.day:
            self.day = day
            self.rng = random.Random(f"bench-life {self.seed} {day.isoformat()}")

    def _message(self, calls, thought: str | None = None):
        blocks = [{"type": "text", "text": thought}] if thought else []
        for name, arguments in calls:
            self.ids += 1
            blocks.append({"type": "tool_use", "id": f"toolu_bench{self.ids:06d}", "name": name, "input": arguments})
        return message(*blocks)

    def _reply(self, calls):
        return self._message(calls, self.words.choice(THOUGHTS) if self.words.random() < 0.6 else None)

    def _new_waking(self, night: bool) -> list:
        rng, plan = self.rng, []
        if not night:
            if rng.random() < 0.3:
                plan.append(("look", {"question": "what is around me?"}))
            if rng.random() < 0.15:
                plan.append(("speak", {"text": rng.choice(SPOKEN)}))
            if rng.random() < 0.25:
                plan.append(("update_mood", {"mood": "calm and a little curious", "why": "a slow, gentle hour"}))
            if rng.random() < 0.1:
                plan.append(("keep_in_mind", {"matter": "ask Ana about the bird on the sill"}))
        if rng.random() < (0.3 if night else 0.7):
            plan.append(("diary", {"entry": rng.choice(DIARY)}))
        minutes = rng.choice([90, 120]) if night else rng.randint(10, 33)
        plan.append(("sleep", {"minutes": minutes}))
        return plan

    def _next_calls(self) -> list:
        if not self.plan:
            return [("sleep", {"minutes": 30})]
        if not self.batched or self.plan[0][0] == "look":
            return [self.plan.pop(0)]
        calls, self.plan = self.plan, []
        return calls

    def _consolidate(self):
        """The consolidation's first answer: keep what matters with the soul's own tools."""
        night = self.night
        calls = [("diary", {"entry": night.choice(DIARY)})]
        if night.random() < 0.5:
            calls.append(("keep_in_mind", {"matter": night.choice(MATTERS)}))
        if night.random() < 1 / 7:  # about once a week it understood something new
            calls.append(
                ("reflect", {"content": NEW_SELF})
                if night.random() < 0.5
                else ("set_aspiration", {"content": NEW_ASPIRATIONS})
            )
        return self._message(calls, "Time to keep what mattered today.")

    def answer(self, request):
        kind = request_kind(request)
        if kind == "keep-warm":  # keep-warm while the soul sleeps: not part of its day's script
            return message({"type": "text", "text": "ok"}, stop_reason="max_tokens")
        self.clock.advance(CALL_SECONDS)
        if kind == "fold":
            self.summaries += 1
            return message({"type": "text", "text": SUMMARY})
        if kind == "consolidation":
            self.consolidations += 1
            return self._consolidate()
        if kind == "digest":  # its tool results are back: the digest, and no tool call ends the turn
            return message({"type": "text", "text": self.night.choice(DIGESTS)})
        said = words_of(request["messages"][-1])
        if "your local time" in said:  # a new waking's snapshot
            self.plans_for(self.clock.now().astimezone(ZoneInfo(TIMEZONE)).date())
            self.plan = self._new_waking("It is night." in said)
        return self._reply(self._next_calls())
