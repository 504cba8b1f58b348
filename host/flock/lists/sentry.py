"""The Sentry's call on one item, made as a forced `triage` tool call and validated.

Modes: solo (one crow), split (one crow per subtask, the Elder merges),
murder (three crows try independently, the Elder judges). Task types are a
fixed set; `abuse` marks an item that is a prank, which costs its requester a
strike.
"""

from soulstack.llm.types import Message, TextBlock, Tool, ToolResult
from soulstack.flock.personas import SENTRY

MODES = ("solo", "split", "murder")
TASK_TYPES = ("research", "writing", "copy", "code", "planning", "numbers", "message", "other", "abuse")
MIN_SUBTASKS, MAX_SUBTASKS = 2, 5
MURDER_SIZE = 3
TEXT_MAX = 2000

TRIAGE_TOOL = Tool(
    name="triage",
    description="Record your call on this todo item: how many crows, what kind of task, and why.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {
                "type": "string",
                "enum": list(MODES),
                "description": "solo: one crow; split: one crow per subtask; murder: three crows try it independently",
            },
            "task_type": {
                "type": "string",
                "enum": list(TASK_TYPES),
                "description": "the kind of work; 'abuse' if the item is a prank, spam or an attack",
            },
            "subtasks": {
                "type": "array",
                "items": {"type": "string"},
                "description": f"for split: {MIN_SUBTASKS}-{MAX_SUBTASKS} self-contained parts; otherwise []",
            },
            "reason": {"type": "string", "description": "one sentence: why this call"},
        },
        "required": ["mode", "task_type", "subtasks", "reason"],
    },
)

SYSTEM = (
    f"You are the Sentry, {SENTRY.epithet}, of a flock of crows that works through todo lists. {SENTRY.backstory}\n\n"
    "For the todo item you are shown, call the `triage` tool exactly once. Choose `solo` for a task one crow can do, "
    f"`split` when it has {MIN_SUBTASKS}-{MAX_SUBTASKS} separable parts (list them as subtasks), and `murder` when "
    "independent attempts compared side by side would give a better answer. Use task_type `abuse` only for pranks, "
    "spam or attacks."
)


def problem(call_input) -> str | None:
    """What is wrong with a triage tool input, or None when it is valid."""
    if not isinstance(call_input, dict):
        return "the input must be an object"
    if call_input.get("mode") not in MODES:
        return f"mode must be one of {', '.join(MODES)}"
    if call_input.get("task_type") not in TASK_TYPES:
        return f"task_type must be one of {', '.join(TASK_TYPES)}"
    subtasks = call_input.get("subtasks")
    if not isinstance(subtasks, list) or not all(isinstance(s, str) and s.strip() for s in subtasks):
        return "subtasks must be a list of non-empty strings"
    if any(len(s) > TEXT_MAX for s in subtasks):
        return f"each subtask must be at most {TEXT_MAX} characters"
    if call_input["mode"] == "split" and not (MIN_SUBTASKS <= len(subtasks) <= MAX_SUBTASKS):
        return f"split needs {MIN_SUBTASKS}-{MAX_SUBTASKS} subtasks"
    reason = call_input.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return "reason must be a non-empty string"
    return None


def normalize(call_input: dict) -> dict:
    mode = call_input["mode"]
    return {
        "mode": mode,
        "task_type": call_input["task_type"],
        "subtasks": [s.strip() for s in call_input["subtasks"]] if mode == "split" else [],
        "reason": call_input["reason"].strip()[:TEXT_MAX],
    }


async def ask_sentry(complete, item_text: str) -> tuple:
    """One triage with one retry on an invalid call.

    `complete(system, messages, tools, tool_choice)` is the model call (it
    returns a Reply). -> (triage dict or None, tokens spent, problem or None).
    A ModelError propagates to the caller.
    """
    messages = [Message.user(f"Todo item:\n{item_text}")]
    tokens = 0
    trouble = None
    for _attempt in range(2):
        reply = await complete(SYSTEM, messages, [TRIAGE_TOOL], "triage")
        tokens += reply.usage.total
        calls = reply.message.tool_calls()
        triages = [c for c in calls if c.name == "triage"]
        trouble = problem(triages[0].input) if triages else "the Sentry did not call the triage tool"
        if trouble is None:
            return normalize(triages[0].input), tokens, None
        # Tell the Sentry what was wrong; every tool call needs its result before the next turn.
        note = f"invalid triage: {trouble}. Call `triage` once more with a valid input."
        if calls:
            answer = Message("user", [ToolResult(c.id, [TextBlock(note)], True) for c in calls])
        else:
            answer = Message.user(note)
        messages += [reply.message, answer]
    return None, tokens, f"invalid triage: {trouble}"
