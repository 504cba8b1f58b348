"""Corrections teach: the owner's kind corrections (POST /api/nests/{id}/messages/{msg_id}/kind,
logged in jev.jsonl beside the decision they correct) become labelled messages, and the local Jev
is re-fitted with them in the background.

- A correction joins its decision's text and context (the log holds both): a labelled message
  that always trains (never held out), the latest MAX_CORRECTIONS of them (memory stays bounded).
- The re-fit runs in a worker thread, a while after the last correction (corrections come in
  bursts: one fit for the burst), and is given up past REFIT_TIMEOUT_S.
- The new model replaces the running one only if it scores no worse on the calibration set
  (data/calibration.nests: log loss, the proper score of probabilities); else the previous one
  stays. Not the separate set: choosing models on it would make its figures no longer separate.
- Each re-fit's outcome is a `relearn` line in jev.jsonl, which `jev-report` shows.
- A restarted flock trains a fresh Jev: the corrections in its log are learned again at start.
"""

import asyncio
import logging
import math
import time

from soulstack.clocks import rfc3339

log = logging.getLogger(__name__)
MAX_CORRECTIONS = 500
REFIT_TIMEOUT_S = 300.0
CONTEXT_DEFAULTS = {"author_role": "crow", "to_role": "", "refers_kind": "", "recent_kinds": [], "open_request": ""}


def corrected_examples(entries: list) -> list:
    """jev.jsonl entries -> labelled messages, one per corrected message (its latest correction)."""
    decisions: dict = {}
    corrections: dict = {}
    for entry in entries:
        if entry.get("question") == "kind" and "text" in entry:
            decisions[entry["msg_id"]] = entry
        elif entry.get("question") == "correction":
            corrections.pop(entry["msg_id"], None)  # re-inserted last: the order of the latest corrections
            corrections[entry["msg_id"]] = entry
    examples = []
    for msg_id, correction in corrections.items():
        decision = decisions.get(msg_id)
        if decision is None:
            continue  # corrected, but logged before decisions carried their text
        context = {**CONTEXT_DEFAULTS, **(decision.get("context") or {})}
        examples.append(
            {
                "conv": f"correction:{msg_id}",
                "lang": "",
                "by": "the owner's correction",
                "msg_id": msg_id,
                "text": decision["text"],
                "kind": correction["kind"],
                "was": correction.get("was", decision.get("kind", "")),
                "header": decision.get("header", ""),
                "plain": False,
                **{key: context[key] for key in CONTEXT_DEFAULTS},
            }
        )
    return examples[-MAX_CORRECTIONS:]


def log_loss(jev, examples: list) -> float:
    from soulstack.flock.jev.local import KINDS

    rows = jev.probs_many(examples)
    return -sum(math.log(max(row[KINDS.index(e["kind"])], 1e-12)) for row, e in zip(rows, examples, strict=True)) / len(
        examples
    )


def refit(corrections: list, current) -> tuple:
    """-> (the new Jev, or None to keep `current`; the outcome for the log). Runs in a thread."""
    from soulstack.flock.jev.local import LocalJev, load_calibration

    started = time.monotonic()
    new = LocalJev(extra=corrections)
    calibration = load_calibration()
    before, after = log_loss(current, calibration), log_loss(new, calibration)
    right = sum(
        1 for row, e in zip(new.probs_many(corrections), corrections, strict=True) if row.argmax() == _index(e["kind"])
    )
    kept = "new" if after <= before else "previous"
    outcome = {
        "corrections": len(corrections),
        "calibration_log_loss_before": round(before, 4),
        "calibration_log_loss_after": round(after, 4),
        "corrected_right_after": right,
        "kept": kept,
        "seconds": round(time.monotonic() - started, 1),
    }
    return (new if kept == "new" else None), outcome


def _index(kind: str) -> int:
    from soulstack.flock.jev.local import KINDS

    return KINDS.index(kind)


class Learner:
    """One re-fit at a time for a StartingJev; `jev_log` is where the corrections are read and the
    outcome written."""

    def __init__(self, jev, jev_log):
        self.jev, self.jev_log = jev, jev_log
        self.running, self.again = False, False

    def corrected(self, wait_s: float):
        """A correction was logged: -> a coroutine to run in the flock's tasks, or None when a
        re-fit is already coming (it will read this correction too, or run once more after)."""
        if self.running:
            self.again = True
            return None
        self.running = True
        return self._run(wait_s)

    async def _run(self, wait_s: float) -> None:
        try:
            while True:
                await asyncio.sleep(wait_s)
                self.again = False  # the corrections made while waiting are in the log read now
                examples = corrected_examples(await asyncio.to_thread(self.jev_log.read))  # a long log
                if not examples:
                    return
                current = await self.jev.current()
                try:
                    new, outcome = await asyncio.wait_for(asyncio.to_thread(refit, examples, current), REFIT_TIMEOUT_S)
                except TimeoutError:
                    new, outcome = (
                        None,
                        {"corrections": len(examples), "kept": "previous", "why": "the re-fit took too long"},
                    )
                if new is not None:
                    self.jev.replace(new)
                self.jev_log.append({"ts": rfc3339(time.time()), "question": "relearn", **outcome})
                log.info("Jev re-fitted with %d corrections: kept the %s model", len(examples), outcome["kept"])
                if not self.again:
                    return
        finally:
            self.running = False
