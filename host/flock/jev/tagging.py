"""The tagging rule (decided 2026-10-27) and Jev's decision log.

Jev gives every crow-postable kind a probability. Then:
- Jev's top kind at or above the band stands: `jev`, or `disagreement` when a
  header named another kind (Jev overrides it). The band is the answering
  backend's: the local Jev's is DEFAULT_BAND (or the flock's `jev_band`); an
  answer whose probabilities are on another scale carries its own (`band`: the
  LLM judge's agreement over three samples, soulstack.flock.jev.judge.Probs);
- Jev below the band and a header present: the header (`header`);
- neither: `say` (`default`).

Every decision is appended to `<data>/jev.jsonl` with the full probability
vector, the header, the band and the outcome, and fsynced: the calibration
experiment (`soulstack flock jev-report`) reads it, with the owner's
corrections, as its ground truth.
"""

import json
import os
from pathlib import Path

from soulstack.flock.jev.llm import JevBackendError
from soulstack.flock.payloads import NestMessage
from soulstack.jsonl import cut_torn_tail, read_records
from soulstack.private_files import open_private

# The local Jev's high band: the lowest at which its sure tags stay right nine times in ten (at the low
# end of a 95% interval) on the two band sets (soulstack.flock.jev.evaluate.choose_band); tests/flock/test_jev_separate.py keeps them equal.
DEFAULT_BAND = 0.60


def narrow(probs: dict, options) -> dict:
    """Jev's probabilities renormalised over the kinds this author may post (the owner's three)."""
    total = sum(probs[kind] for kind in options)
    return {kind: (probs[kind] / total if total > 0 else 1 / len(options)) for kind in options}


def decide(probs: dict, header: str, band: float) -> tuple:
    """-> (kind, tagged_by) from Jev's probabilities and the crow's header ("" for none)."""
    top = max(probs, key=lambda kind: probs[kind]) if probs else None
    if top is not None and probs[top] >= band:
        return top, ("disagreement" if header and header != top else "jev")
    if header:
        return header, "header"
    return "say", "default"


class JevLog:
    """Appends one JSON line per Jev decision or correction and makes it durable."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._cut_a_torn_tail()

    def _cut_a_torn_tail(self) -> None:
        """A power cut mid-append leaves a line without its end; the next decision would be glued
        onto it and both lost to jev-report. Only a file that does not end its last line is read."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) == b"\n":
                    return
        except (FileNotFoundError, OSError):  # no file yet, or an empty one (seek before its start)
            return
        cut_torn_tail(self.path, read_records(self.path, lambda value: None))

    def append(self, entry: dict) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        # O_APPEND writes a line whole; fsync so a decision the API answered survives a crash.
        # The texts people and crows posted: 0600 on every append (soulstack.private_files).
        with open_private(self.path, "ab", buffering=0) as handle:
            handle.write(line.encode())
            os.fsync(handle.fileno())

    def read(self) -> list:
        if not self.path.exists():
            return []
        entries: list = []
        read_records(self.path, entries.append)  # a line cut short by a power cut is skipped; the rest is intact
        return entries


class Tagger:
    """Jev plus the rule plus the log: what the harness calls for each posted message."""

    def __init__(self, jev, band: float, jev_log: JevLog):
        from soulstack.flock.jev.learn import Learner

        self.jev, self.band, self.jev_log = jev, band, jev_log
        # Only the local Jev a server starts can be re-fitted from the owner's corrections: Jev itself,
        # or the fallback of the LLM backends (soulstack.flock.jev.judge).
        local = jev if hasattr(jev, "replace") else getattr(jev, "fallback", None)
        self.learner = Learner(local, jev_log) if hasattr(local, "replace") else None

    async def tag(self, text: str, header: str, context: dict, options=None, history=(), nest_id: str = "") -> dict:
        """-> the decision: kind, tagged_by, probs, ... `context`: soulstack.flock.jev.context's fields.
        `options` narrows the question to the kinds this author may post (the owner: say, request,
        refer); the probabilities are renormalised over them. A backend that fails leaves Jev unsure
        (no probabilities): the header or `say` decides. `history` (the nest's earlier records) and
        `nest_id` go only to a backend that reads them (`wants_history`: the LLM judge)."""
        error = None
        extra = {"history": history, "nest_id": nest_id} if getattr(self.jev, "wants_history", False) else {}
        try:
            probs = await self.jev.kind_probs_async(text, **extra, **context)
        except JevBackendError as failure:
            probs, error = {}, str(failure)
        backend = getattr(probs, "backend", self.jev.name)  # the judge says when the local Jev answered
        band = getattr(probs, "band", None) or self.band  # the judge's own scale, else the local Jev's
        if options and probs:
            probs = narrow(probs, options)
        kind, tagged_by = decide(probs, header, band)
        decision = {
            "backend": backend,
            "probs": dict(probs),
            "header": header,
            "band": band,
            "kind": kind,
            "tagged_by": tagged_by,
            "context": context,
            "text": text,
        }
        return decision if error is None else {**decision, "error": error}

    def logged(self, decision: dict, message: NestMessage) -> None:
        """Log a decision once its message is stored (a refused message leaves no line)."""
        self.jev_log.append({"ts": message.ts, "question": "kind", "msg_id": message.msg_id, **decision})

    def flagged(self, ts: str, msg_id: str, crow: str, why: str) -> None:
        """The Sentry's flag of `crow`, in the same log."""
        self.jev_log.append({"ts": ts, "question": "flag", "msg_id": msg_id, "crow": crow, "why": why})

    def correction(self, ts: str, msg_id: str, kind: str, was: str) -> None:
        self.jev_log.append({"ts": ts, "question": "correction", "msg_id": msg_id, "kind": kind, "was": was})

    def learn(self, wait_s: float):
        """-> the background re-fit to run after a correction (soulstack.flock.jev.learn), or None."""
        return self.learner.corrected(wait_s) if self.learner is not None else None

    def judge_miss(self, ts: str, msg_id: str, crow: str, expects: str, p_missed: float) -> bool:
        """Log Jev's answer to "did <crow> miss this?"; -> True when it is at or above the band."""
        missed = p_missed >= self.band
        self.jev_log.append(
            {
                "ts": ts,
                "question": "missed",
                "msg_id": msg_id,
                "crow": crow,
                "expects": expects,
                "probs": {"missed": p_missed, "answered": 1.0 - p_missed},
                "band": self.band,
                "missed": missed,
            }
        )
        return missed
