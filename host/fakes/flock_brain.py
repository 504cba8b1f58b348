"""A scripted mind for the flock: answers each call by what it is asked, so the flock works offline.

`python -m soulstack.fakes.run_fake_anthropic --flock` serves it (docs/try-the-flock-offline.md).
No model thinks here; the rules are plain so a person can predict them:

- the Sentry (a call offering the `triage` tool): an item with "and" or commas
  between its parts is `split` into those parts (2-5); one asking to compare
  or choose ("which", "best", "compare", " or ") is a `murder` of three
  attempts; anything else is `solo`. The task type comes from keywords
  (code, write, plan, numbers...), "research" otherwise;
- the Elder (its system prompt starts "You are the Elder"): a merge or a ruling
  that quotes the crows' first lines;
- a crow: a short answer naming its task and itself.
"""

import re

from soulstack.fakes.anthropic_api import text, tool_use

TASK_WORDS = [
    ("code", ("code", "script", "function", "bug", "python", "program")),
    ("writing", ("write", "draft", "poem", "letter", "essay")),
    ("planning", ("plan", "schedule", "organise", "organize", "trip")),
    ("numbers", ("count", "sum", "budget", "calculate", "how many", "numbers")),
    ("message", ("email", "message", "reply to", "tell ")),
]


def task_type(item: str) -> str:
    lower = item.lower()
    return next((kind for kind, words in TASK_WORDS if any(w in lower for w in words)), "research")


def triage(item: str) -> dict:
    parts = [p.strip(" .") for p in re.split(r",|\band\b", item) if p.strip(" .")]
    lower = item.lower()
    if 2 <= len(parts) <= 5:
        return {
            "mode": "split",
            "task_type": task_type(item),
            "subtasks": parts,
            "reason": f"{len(parts)} separate parts; one crow each",
        }
    if any(word in lower for word in ("which", "best", "compare", " or ")):
        return {
            "mode": "murder",
            "task_type": task_type(item),
            "subtasks": [],
            "reason": "a choice: three crows try it and the Elder judges",
        }
    return {"mode": "solo", "task_type": task_type(item), "subtasks": [], "reason": "one crow can do this"}


def _text_of(content) -> str:
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if isinstance(b, dict))


def answer(body: dict) -> dict:
    """The reply to one Messages API request from the flock."""
    system = _text_of(body.get("system") or "")
    prompt = _text_of(body["messages"][0]["content"])
    if any(tool.get("name") == "triage" for tool in body.get("tools") or []):
        item = prompt.removeprefix("Todo item:").strip()
        return tool_use("triage", triage(item))
    if system.startswith("You are the Elder"):
        firsts = [line for line in prompt.splitlines() if line.startswith(("By ", "Attempt by "))]
        return text("The Elder's answer, from " + "; ".join(firsts) + ": all of it holds together.")
    crow = system.removeprefix("You are ").split(",")[0]
    return text(f"{crow} did it: {prompt.strip()[:200]} (a scripted answer; no model thought about it).")
