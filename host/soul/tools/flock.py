"""hand_to_flock, flock_waiting, flock_verdict: the soul's hands on its person's flock.

Grown only when the config names the flock (`flock.url`, and `flock.token` when
the flock is locked). The soul hands work over as its person's helper; the
flock's questions and results come back to it as nudges (soulstack flock
--soul). Approvals are the person's: `flock_verdict` records what the person
said, and its description says so, because the soul must never decide them
itself. The words are not the guarantee: `flock_verdict` refuses (a failed
tool call: "ask your person first") unless a person's own words reached the
soul in this waking — spoken through converse, typed into a body (a nudge
carrying `words`), or heard during the turn. A waking caused only by the
flock's own nudge can never record a verdict. Every failure reaches the soul
as a failed tool call, never a fake success.
"""

import aiohttp

from soulstack.soul.tools import Outcome, SoulTool

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.config import SoulConfig

TIMEOUT_S = 15


class FlockUnreachable(Exception):
    pass


async def _call(soul, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    flock = soul.cfg.flock
    headers = {"Authorization": f"Bearer {flock.token}"} if flock.token else {}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as http:
            async with http.request(method, flock.url.rstrip("/") + path, json=body, headers=headers) as response:
                answer = await response.json(content_type=None) if response.content_length != 0 else {}
                return response.status, answer if isinstance(answer, dict) else {}
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        raise FlockUnreachable(f"the flock at {flock.url} did not answer ({type(error).__name__})") from None


def _failed(why: str) -> Outcome:
    return Outcome.text(f"That did not work: {why}", ok=False)


async def hand_to_flock(soul, text: str) -> Outcome:
    if not text.strip():
        return _failed("the list is empty; write one task per line")
    try:
        status, answer = await _call(soul, "POST", "/api/lists", {"text": text, "requester": soul.cfg.persona.name})
    except FlockUnreachable as error:
        return _failed(str(error))
    if status == 202:
        return Outcome.text(
            f"The flock took the list (list {answer.get('list_id')}). Its questions and results will reach you."
        )
    return _failed(f"the flock answered {status}: {answer.get('message', '')}")


async def flock_waiting(soul) -> Outcome:
    try:
        status, answer = await _call(soul, "GET", "/api/waiting")
    except FlockUnreachable as error:
        return _failed(str(error))
    if status != 200:
        return _failed(f"the flock answered {status}: {answer.get('message', '')}")
    waiting = answer.get("waiting") or []
    if not waiting:
        return Outcome.text("Nothing of the flock's waits for your person's decision.")
    return Outcome.text("Waiting for your person's yes or no:\n" + "\n".join(map(_waiting_line, waiting)))


def _waiting_line(entry: dict) -> str:
    item_id, target = entry.get("item_id"), entry.get("target")
    if target == "flag":
        crow = (entry.get("crows") or ["a crow"])[0]
        return (
            f"- item {item_id} (flag): the Sentry flagged {crow} in nest {entry.get('nest_id')} "
            f"('{entry.get('text')}') and quarantined it. Yes upholds the flag ({crow} stays quarantined), "
            f"no releases {crow}; unanswered, {crow} stays quarantined"
        )
    what = "its plan for" if target == "triage" else "the answer to"
    line = f"- item {item_id} ({target}): {what} '{entry.get('text')}'"
    if entry.get("answer"):
        line += f"\n  answer: {entry['answer'][:1500]}"
    return line


def person_spoke(soul) -> bool:
    """Whether a person's own words reached the soul in this waking (the loop's `persons_words`:
    converse words, a nudge's by the nudge contract's one rule `words_of`, words heard mid-turn)."""
    return bool(soul.persons_words())


TARGETS = ("triage", "output", "flag")
ASK_FIRST = (
    "ask your person first: no person's words reached you in this waking, and a verdict is "
    "theirs alone. Tell them what waits and record their yes or no when they answer."
)


async def flock_verdict(soul, item_id: str, target: str, approve: bool) -> Outcome:
    if not person_spoke(soul):
        return _failed(ASK_FIRST)
    if target not in TARGETS:
        return _failed('target is "triage" (its plan), "output" (its answer) or "flag" (a Sentry flag)')
    try:
        status, answer = await _call(
            soul, "POST", "/api/verdicts", {"item_id": item_id, "target": target, "approve": approve}
        )
    except FlockUnreachable as error:
        return _failed(str(error))
    if status == 204 and target == "flag":
        return Outcome.text(f"Recorded: your person {'upheld' if approve else 'rejected'} the flag {item_id}.")
    if status == 204:
        return Outcome.text(
            f"Recorded: your person {'approved' if approve else 'rejected'} {target} of item {item_id}."
        )
    return _failed(f"the flock answered {status}: {answer.get('message', '')}")


def flock_tools(cfg: "SoulConfig") -> list:
    if not cfg.flock.url:
        return []
    string = {"type": "string"}
    return [
        SoulTool(
            "hand_to_flock",
            "Hand a todo list to your person's flock of helper crows (one task per line). "
            "Do it when your person asks for work to be done.",
            {"text": {**string, "description": "the todo list, one task per line"}},
            hand_to_flock,
            ["text"],
        ),
        SoulTool(
            "flock_waiting",
            "See what the flock is waiting on: plans, answers and Sentry flags that need your person's yes or no.",
            {},
            flock_waiting,
        ),
        SoulTool(
            "flock_verdict",
            "Record your person's decision on a flock item. ONLY when your person has said yes or "
            "no to it: never decide an approval yourself; if they have not said, ask them.",
            {
                "item_id": {**string, "description": "the item, e.g. 3f2a-2, or a flag's, e.g. launch-7"},
                "target": {
                    **string,
                    "enum": list(TARGETS),
                    "description": "triage: its plan; output: its answer; flag: a Sentry flag on a crow",
                },
                "approve": {
                    "type": "boolean",
                    "description": "true when your person said yes (for a flag: keep the crow quarantined)",
                },
            },
            flock_verdict,
            ["item_id", "target", "approve"],
            informs=False,
        ),
    ]
