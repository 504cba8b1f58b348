"""The rules of a nest that need no model: who is a member, what the Sentry
flags, how a crow's reply is read, and what a crow is told when invoked.

Members of a nest: "owner", its core crows (for `todo`, whose core is empty,
the whole roster) and borrowed crows while they work there (a crow the
harness owes an expectation in this nest). The Sentry and the Elder serve
every nest: they may be addressed, though they post only through the server.
"""

import re

from soulstack.flock.payloads import NestMessage
from soulstack.flock.personas import BY_NAME, ROSTER_NAMES
from soulstack.flock.rows import NestRow

SERVERS = ("Sentry", "Elder", "harness")
PASTE_CHARS = 1200  # a crow message this long that looks like a file should have been a `refer`
PASTE_LINES = 15
ANSWER_WINDOW = 50  # how far back an answer that names no request looks for the one it answers
HEADER = re.compile(r"^\s*\[(say|request|claim|deliver|refer|decline)\]\s*", re.IGNORECASE)


def members(nest: NestRow, working: set) -> set:
    core = nest.crows or ROSTER_NAMES
    return {"owner", *core, *working}


def is_crow(name: str) -> bool:
    return name in ROSTER_NAMES


def breach(record: NestMessage, nest_members: set, claimed_by: list) -> str | None:
    """What the Sentry flags in a crow's message, or None. `claimed_by`: crows that
    claimed the request this message refers to."""
    kind, author, to = record.kind, record.author, record.to
    if kind == "deliver" and author not in claimed_by:
        return f"{author} delivered without claiming {record.refers_to or 'any request'}"
    if to and to not in nest_members and to not in SERVERS:
        return f"{author} addressed {to!r}, who is not a member of this nest"
    text = record.text
    if kind != "refer" and len(text) >= PASTE_CHARS and ("```" in text or text.count("\n") >= PASTE_LINES):
        return f"{author} pasted a long artifact ({len(text)} characters) instead of a `refer` to it by name"
    return None


def answered_request(recent: list[NestMessage], author: str, kind: str) -> NestMessage | None:
    """The request a crow's claim, decline or deliver answers when it names none (`recent`: the
    nest's last messages, oldest first). A claim or decline answers the latest request addressed to
    the crow that it has not claimed or declined yet, else the latest such request to the room; a
    deliver, the latest request it claimed and has not delivered. None: nothing open fits (a
    deliver then breaches, as it should)."""
    mine = {(m.refers_to, m.kind) for m in recent if m.author == author}
    requests = [m for m in reversed(recent) if m.kind == "request" and m.author != author]
    if kind == "deliver":
        return next((m for m in requests if (m.msg_id, "claim") in mine and (m.msg_id, "deliver") not in mine), None)
    unanswered = [m for m in requests if not mine & {(m.msg_id, "claim"), (m.msg_id, "decline")}]
    return next((m for m in unanswered if m.to == author), None) or next((m for m in unanswered if not m.to), None)


def read_reply(text: str) -> tuple:
    """A crow's model reply -> (header kind or "", text without the header)."""
    match = HEADER.match(text)
    if not match:
        return "", text.strip()
    return match.group(1).lower(), text[match.end() :].strip()


def nest_system(crow: str, nest: NestRow) -> str:
    persona = BY_NAME[crow]
    return (
        f"You are {persona.name}, {persona.epithet}, one crow of a flock, talking in the nest "
        f'"{nest.name}". Your strength: {persona.strength}. {persona.backstory}\n\n'
        "Answer the one message you are pointed at, in character but briefly. Begin your reply with its kind "
        "in square brackets: [claim] to take a request on, [deliver] with the finished work, [decline] with a "
        "reason, [refer] to point at a file by name instead of pasting it, [request] to ask someone, [say] "
        "for anything else. Deliver only what you claimed."
    )


def nest_prompt(recent: list[NestMessage], trigger: NestMessage, instruction: str) -> str:
    lines = [f"{m.msg_id} [{m.kind}] {m.author}" + (f" to {m.to}" if m.to else "") + f": {m.text}" for m in recent]
    return "The nest so far:\n" + "\n".join(lines) + f"\n\nYour turn, about {trigger.msg_id}: {instruction}"
