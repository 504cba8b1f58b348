"""The demo's scripted mind: the flock's Sentry, crows and Elder answered by plain rules.

No model thinks here; the rules are plain so a person can predict them, and every answer
says it was scripted. `soulstack flock --demo` runs them inside the flock (model.py); the
test suite's fake Anthropic server answers with them too (`run_fake_anthropic --flock`,
host/fakes/flock_brain.py), so the demo and docs/try-the-flock-offline.md show the same flock.

- the Sentry (a call offering the `triage` tool): a question ("which…?", "…?") is never cut
  into pieces: one that asks to choose or compare ("which", "better", "best", " or ", "vs")
  is a `murder` of three attempts, any other question `solo`. An errand list joined by commas,
  "and" or ";" is `split` into its parts (2-5), each part keeping the verb it shares
  ("buy bread, milk and eggs": buy bread / buy milk / buy eggs). Anything else is `solo`.
  The task type comes from keywords (code, write, plan, numbers...), "research" otherwise;
- a crow on a list's job: a short answer shaped by the task type, in the crow's voice;
- the Elder (its system prompt starts "You are the Elder"): a merge of the parts into one
  answer, or a ruling that picks one attempt and says why;
- banter (a system prompt asking for "one short aside"): one line in the speaker's character
  to the other crow, with no name prefix (soulstack.flock.lists.banter's rules);
- a crow in a nest (its system prompt says "talking in the nest"): `[claim]` when asked to
  claim, `[deliver]` when it claimed, `[say]` otherwise.
"""

import hashlib
import re

SCRIPTED = "_(scripted offline answer: no model thought about this)_"

TASK_WORDS = [
    ("code", ("code", "script", "function", "bug", "python", "program")),
    ("writing", ("write", "draft", "poem", "letter", "essay")),
    ("planning", ("plan", "schedule", "organise", "organize", "trip", "pack", "buy ", "pick up", "water ", "feed ")),
    ("numbers", ("count", "sum", "budget", "calculate", "how many", "numbers", "cost")),
    ("message", ("email", "message", "reply to", "tell ", "text ")),
]
QUESTION_STARTS = ("which", "what", "how", "why", "who", "where", "when", "should", "is ", "are ", "can ", "do ")
CHOICE_WORDS = ("which", "better", "best", "compare", " or ", " vs", "versus", "choose")
# Verbs an errand starts with: a part without one borrows the verb of the part before it.
VERBS = set(
    "ask book buy call cancel check clean cook draft email feed find fix get pack pay pick plan post print "
    "read renew reply return ring sell send sort take text tidy walk wash water write order collect "
    "make bake repair update back".split()
)

SHOPPING = ("buy", "get", "order", "pick", "collect")
# Each crow's voice, from docs/PERSONAS.md: how it signs an answer, and its asides to another crow.
VOICES = {
    "Hugin": (
        "One more question I'd ask before acting: is this still the real goal?",
        [
            "{to}, I checked your part twice. It holds. I'm still going to ask one more question about it.",
            "Admit it, {to}: the dull fact was the useful one this time.",
        ],
    ),
    "Munin": (
        "Noted, so nobody has to remember it twice.",
        [
            "{to}, that's the third time this month you've been right on the first try. I'm writing it down.",
            "I'll remember what you promised here, {to}. You needn't.",
        ],
    ),
    "Pepper": (
        "Short version: do it today and it's done.",
        [
            "{to}, your half had twelve words too many and I loved eleven of them.",
            "Not bad, {to}. Next time let me name the thing.",
        ],
    ),
    "Inky": (
        "I've kept it plain; it reads better that way.",
        [
            "{to}, I edited nothing of yours. Mark the date.",
            "A fine paragraph, {to}, though it wanted one more comma.",
        ],
    ),
    "Tinker": (
        "Small steps, each one checkable.",
        [
            "{to}, it works. I'd still like a test for it.",
            "Took yours apart to see how it ticked, {to}. Put it back, promise.",
        ],
    ),
    "Ledger": (
        "Figures rounded up, as one should.",
        [
            "{to}, by my count you finished four seconds before me. I've logged it.",
            "Your estimate was honest, {to}. Rare. I approve.",
        ],
    ),
    "Soot": (
        "Three ways to do it; the first is the one I'd take.",
        [
            "Scouted ahead of you again, {to}. Race you to the next one!",
            "{to}, I found the shortcut. You're welcome.",
        ],
    ),
    "Marlow": (
        "Kindly put, and nothing left for anyone to mind.",
        [
            "Well flown, {to}. I told them you'd have it in hand, and you did.",
            "{to}, that was gracious work. Nobody will feel hurried by it.",
        ],
    ),
}
DEFAULT_VOICE = ("Done, as asked.", ["Good flying, {to}."])


def task_type(item: str) -> str:
    lower = item.lower()
    return next((kind for kind, words in TASK_WORDS if any(w in lower for w in words)), "research")


def is_question(item: str) -> bool:
    lower = item.strip().lower()
    return lower.endswith("?") or lower.startswith(QUESTION_STARTS)


def errands(item: str) -> list:
    """The parts of an errand list, each with a verb: "buy bread, milk and eggs" -> three buys."""
    parts = [p.strip(" .") for p in re.split(r",|;|\band\b", item) if p.strip(" .")]
    verb, done = None, []
    for part in parts:
        first = part.split()[0].lower()
        if first in VERBS:
            verb = first
        elif verb:
            part = f"{verb} {part}"
        done.append(part)
    return done


def triage(item: str) -> dict:
    kind = task_type(item)
    lower = item.lower()
    if is_question(item):
        if any(word in lower for word in CHOICE_WORDS):
            why = "a choice: three crows weigh it separately and the Elder judges"
            return {"mode": "murder", "task_type": kind, "subtasks": [], "reason": why}
        return {"mode": "solo", "task_type": kind, "subtasks": [], "reason": "one question; one crow answers it"}
    parts = errands(item)
    if 2 <= len(parts) <= 5:
        reason = f"{len(parts)} separate errands; one crow each"
        return {"mode": "split", "task_type": kind, "subtasks": parts, "reason": reason}
    return {"mode": "solo", "task_type": kind, "subtasks": [], "reason": "one crow can do this"}


def pick(seed: str, options: list):
    """The same choice for the same words, so a run can be predicted and repeated."""
    return options[hashlib.sha256(seed.encode()).digest()[0] % len(options)]


def options_in(task: str) -> list:
    """The options a choice names: "a ThinkPad or a MacBook" -> ["a ThinkPad", "a MacBook"]."""
    tail = task.rstrip(" ?.").split(",")[-1]
    found = [o.strip() for o in re.split(r"\bor\b|\bvs\.?\b|\bversus\b", tail) if o.strip()]
    return found if len(found) >= 2 else []


def crow_answer(crow: str, task: str) -> str:
    """A list job's answer: a small useful shape for its kind of task, signed in the crow's voice."""
    sign = VOICES.get(crow, DEFAULT_VOICE)[0]
    kind = task_type(task)
    options = options_in(task)
    title = task[:1].upper() + task[1:]
    if options:
        lean = pick(crow + task, options)
        body = (
            f"**I'd take {lean}**: weigh what each costs over its whole life, how long it lasts, and what "
            f"the person already knows how to use; {lean} wins on the one that matters most here."
        )
    elif task.split()[0].lower() in SHOPPING:
        body = f"**{title}**: onto the list for the next trip to the shops; check the date before you pay."
    else:
        how = {
            "planning": "pick a slot this week, gather what it needs first, then do it in one go and tick it off.",
            "writing": "open with why it matters, give one paragraph of substance, and end on a clear last line.",
            "message": '"Hello, a quick note about this: could you let me know by Friday? Thank you!"',
            "numbers": "list each cost, add them up, then add a tenth for what you forgot.",
            "code": "reproduce it first, change one thing at a time, and keep the test that proves it.",
        }.get(kind, "the short answer first, then the one caveat worth knowing.")
        body = f"**{title}**: {how}"
    return f"{body}\n\n{crow}: {sign}\n\n{SCRIPTED}"


def _blocks(prompt: str, marker: str) -> list:
    """[(crow, job, head, rest)] from the Elder's prompt (soulstack.flock.lists.flow._elder): each
    answer's first line, "**head**: rest" as crow_answer writes it (head "" for other shapes)."""
    found = []
    for chunk in prompt.split("\n\n"):
        lines = chunk.splitlines()
        job = lines[0].removeprefix("Part: ") if lines and lines[0].startswith("Part: ") else ""
        by = next((i for i, line in enumerate(lines) if line.startswith(marker)), None)
        if by is None:
            continue
        crow = lines[by].removeprefix(marker).rstrip(":")
        said = next((line.strip() for line in lines[by + 1 :] if line.strip()), "")
        head, _, rest = said.removeprefix("**").partition("**: ") if said.startswith("**") else ("", "", said)
        found.append((crow, job, head, rest or said))
    return found


def elder(prompt: str) -> str:
    task = prompt.splitlines()[0].removeprefix("The task: ")
    parts = _blocks(prompt, "By ")
    if parts:  # a merge: the parts as one answer, in order
        rows = "\n".join(f"- **{job[:1].upper() + job[1:]}**: {rest}" for _crow, job, _head, rest in parts)
        who = ", ".join(crow for crow, *_ in parts)
        return f"All of **{task}**, in one go:\n\n{rows}\n\nThe parts came from {who}.\n\n{SCRIPTED}"
    attempts = _blocks(prompt, "Attempt by ")
    if not attempts:
        return f"On **{task}**: nothing came back to judge.\n\n{SCRIPTED}"
    best, _job, head, rest = attempts[0]
    verdict = f"{head}. {rest[:1].upper() + rest[1:]}" if head and head.lower() != task.lower() else rest
    others = [crow for crow, *_ in attempts[1:]]
    also = f" {' and '.join(others)} weighed the same things; their attempts are worth a look." if others else ""
    return f"On **{task}**, I side with {best}. {verdict}{also}\n\n{SCRIPTED}"


def banter(system: str) -> str:
    speaker = system.removeprefix("You are ").split(",")[0]
    to = system.split("one short aside to ")[1].split(",")[0]
    return pick(system, VOICES.get(speaker, DEFAULT_VOICE)[1]).format(to=to)


def nest_reply(system: str, prompt: str) -> str:
    crow = system.removeprefix("You are ").split(",")[0]
    turn = prompt.rsplit("Your turn, about ", 1)[-1]
    if "claim it" in turn:
        return pick(crow + turn, ["[claim] Leave that one with me.", "[claim] Mine. Back shortly."])
    if "you claimed it" in turn or "you owe a deliver" in turn:
        return f"[deliver] Done. Here it is, short: the main point first, then one thing to watch for. {SCRIPTED}"
    return f"[say] {VOICES.get(crow, DEFAULT_VOICE)[0]}"


def reply(system: str, prompt: str, tools: list) -> tuple:
    """The answer to one call: ("tool", name, input) or ("text", words). `prompt` is the call's
    first message, `tools` the names of the tools it offers."""
    if "triage" in tools:
        return "tool", "triage", triage(prompt.removeprefix("Todo item:").strip())
    if system.startswith("You are the Elder"):
        return "text", elder(prompt)
    if "one short aside" in system:
        return "text", banter(system)
    if "talking in the nest" in system:
        return "text", nest_reply(system, prompt)
    return "text", crow_answer(system.removeprefix("You are ").split(",")[0], prompt.strip())


def wait_s(pace_s: float, seed: str) -> float:
    """How long to take over a call: 0.75-1.25 x the pace, the same for the same call, so the
    crows of one item land one after another."""
    return pace_s * (0.75 + pick(seed, list(range(51))) / 100)
