"""session.jsonl: the soul's stream of consciousness, one JSON record per line.

Every message is appended (flush + fsync) the moment it exists, so a kill -9
loses at most the line being written. On start the file is read back: a torn
last line is cut off with a warning (so the next append starts on a clean
line) and everything before it is kept.

Records:
  {"type": "message", "message": {...Message.to_json()}, "at": "<iso time>", "waking"?: true}
  {"type": "fold", "summary": "<text>", "upto": <number of messages folded>, "at": ..., "night"?: "<date>"}
  {"type": "consolidation", "night": "<date>", "waking": <index of its snapshot>, "at": ...}
"waking" marks a waking's snapshot, where that waking began (host/soul/memory/settle.py
needs to know which reply ended each waking). A fold says: the first `upto`
messages are replaced by `summary` (the context ceiling writes these; a
restart keeps the fold). A consolidation record says
the night's consolidation began (consolidate.py, beside this file); the fold carrying that
"night" says it is done.
"""

import json
import logging
import os
from pathlib import Path

from soulstack.jsonl import cut_torn_tail, read_records
from soulstack.llm.types import Message, TextBlock, ToolResult
from soulstack.private_files import open_private, tighten

log = logging.getLogger(__name__)

INTERRUPTED = "(this was cut short: the soul's process stopped before it finished)"


class Session:
    def __init__(self, path):
        self.path = Path(path)
        self.messages: list = []  # every message ever, in order
        self.waking_starts: list[int] = []  # indexes in `messages` of the wakings' snapshots
        self.fold_summary: str | None = None
        self.fold_upto = 0
        self.consolidating: dict | None = None  # a consolidation begun and not yet folded
        self.consolidated_night: str | None = None  # the last night whose consolidation is done
        self.warnings: list[str] = []
        self._handle = None

    # --- reading back ----------------------------------------------------------------------

    def load(self) -> "Session":
        if not self.path.exists():
            return self
        tighten(self.path)  # every conversation the soul had: 0600, even if an older soulstack left it 0644
        reading = read_records(self.path, self._take)
        for skipped in reading.skipped:
            where = "its last line" if skipped.last else f"line {skipped.number}"
            warning = f"{self.path.name}: skipped {where}, which is torn or not a record ({skipped.error})"
            log.warning(warning)
            self.warnings.append(warning)
        cut_torn_tail(self.path, reading)  # a bad line in the middle stays; only a torn tail is cut
        return self

    def _take(self, record: dict):
        kind = record.get("type")
        if kind == "message":
            self.messages.append(Message.from_json(record["message"]))
            if record.get("waking"):
                self.waking_starts.append(len(self.messages) - 1)
        elif kind == "fold":
            self.fold_summary = str(record["summary"])
            self.fold_upto = int(record["upto"])
            if record.get("night"):
                self.consolidated_night, self.consolidating = str(record["night"]), None
        elif kind == "consolidation":
            self.consolidating = {"night": str(record["night"]), "waking": int(record["waking"])}
        else:
            raise ValueError(f"unknown record type {kind!r}")

    # --- what the model sees -------------------------------------------------------------

    def history(self) -> list:
        """The messages after the last fold, made whole: a tool call the process died in gets an answer."""
        return close_open_calls(self.messages[self.fold_upto :])

    # --- writing ----------------------------------------------------------------------------

    def append(self, message: Message, at: str = "", waking: bool = False) -> None:
        """Store `message`; `waking`: it is a waking's snapshot, where that waking begins."""
        self.messages.append(message)
        record = {"type": "message", "message": message.to_json(), "at": at}
        if waking:
            record["waking"] = True
            self.waking_starts.append(len(self.messages) - 1)
        self._write(record)

    def append_fold(self, summary: str, upto: int, at: str = "", night: str | None = None) -> None:
        record = {"type": "fold", "summary": summary, "upto": upto, "at": at}
        if night:
            record["night"] = night
        self._write(record)
        self.fold_summary, self.fold_upto = summary, upto
        if night:
            self.consolidated_night, self.consolidating = night, None

    def begin_consolidation(self, night: str, waking: int, at: str = "") -> None:
        self._write({"type": "consolidation", "night": night, "waking": waking, "at": at})
        self.consolidating = {"night": night, "waking": waking}

    def _write(self, record: dict):
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open_private(self.path, "a", encoding="utf-8")
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self):
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def close_open_calls(messages: list) -> list:
    """Every tool call must be followed by its result; a call left open by a crash gets one saying so."""
    out = []
    for index, message in enumerate(messages):
        out.append(message)
        calls = message.tool_calls() if message.role == "assistant" else []
        if not calls:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = set()
        if following is not None and following.role == "user":
            answered = {b.tool_call_id for b in following.content if isinstance(b, ToolResult)}
        missing = [ToolResult(c.id, [TextBlock(INTERRUPTED)], is_error=True) for c in calls if c.id not in answered]
        if missing:
            out.append(Message("user", missing))  # coalesce() merges it with the results that exist
    return coalesce(out)


def coalesce(messages: list) -> list:
    """Merge neighbours of the same role (APIs want user/assistant turns to alternate); tool results first."""
    out: list = []
    for message in messages:
        if out and out[-1].role == message.role:
            merged = out[-1].content + message.content
            if message.role == "user":
                merged = [b for b in merged if isinstance(b, ToolResult)] + [
                    b for b in merged if not isinstance(b, ToolResult)
                ]
            out[-1] = Message(message.role, merged)
        else:
            out.append(Message(message.role, list(message.content)))
    return out
