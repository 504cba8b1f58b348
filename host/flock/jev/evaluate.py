"""Jev measured where it matters: on the separate set (data/outside.nests), written by someone who
never saw the training set, never trained or fitted on. The combination's temperature is fitted on
the calibration set (data/calibration.nests, another writer, who never saw the other files); the
band is chosen on the band sets, that one and data/same_writer.nests (train.nests' writer,
by other rules).

Every figure is of the tags the flock would really make (soulstack.flock.jev.tagging): an owner's
message is asked only over the owner's kinds, and the rule falls back to the crow's header, then
`say`, below the band.

- accuracy_sure: how often Jev's kind was right where Jev was sure (at or above the band);
- coverage: the share of messages where Jev was sure;
- overall: how often the tag that stood (Jev's, the header's or `say`) was the true kind;
- ece: the expected calibration error of Jev's top probability (10 bins), with its reliability table;
- plain_sure_wrong: messages whose words alone state their kind (`!` in the data) that Jev tagged
  surely and wrongly: the tag that overrides a right header and that the harness then acts on.

The band: the lowest of BANDS (so Jev decides as often as it can) at which its sure tags are right
at least SURE_TARGET of the time at the low end of a 95% Wilson interval on the band sets, while
sure on at least GOAL's coverage of them. The band sets' two writers are not the separate set's,
and real nests are further from all of them, so the lower bound, not the mean, has to reach 0.90.
With no band meeting it, the band with the best lower bound (the higher of equals).
"""

import math
from collections import Counter

from soulstack.flock.jev.context import OWNER_KINDS
from soulstack.flock.jev.dataset import context_of
from soulstack.flock.jev.local import KINDS, measure
from soulstack.flock.jev.tagging import decide, narrow

BANDS = tuple(round(0.5 + 0.05 * step, 2) for step in range(10))
GOAL = {
    "accuracy_sure": 0.90,
    "coverage": 0.60,
    "overall": 0.80,
    "ece": 0.05,
}  # issue 45's, and no plain sure-and-wrong
SURE_TARGET = 0.90


def as_tagged(rows, examples) -> list:
    """Probability rows (KINDS order) -> {kind: p} as the tagger sees them (the owner's narrowed)."""
    probs = []
    for row, example in zip(rows, examples, strict=True):
        each = {kind: float(p) for kind, p in zip(KINDS, row, strict=True)}
        probs.append(narrow(each, OWNER_KINDS) if example["author_role"] == "owner" else each)
    return probs


def figures(probs: list, examples: list, band: float) -> dict:
    truths = [e["kind"] for e in examples]
    sure = [max(p.values()) >= band for p in probs]
    tops = [max(p, key=p.get) for p in probs]
    right_sure = sum(1 for s, top, truth in zip(sure, tops, truths, strict=True) if s and top == truth)
    stood = [decide(p, e["header"], band)[0] for p, e in zip(probs, examples, strict=True)]
    calibration = measure([[p.get(kind, 0.0) for kind in KINDS] for p in probs], truths)
    plain = [e.get("plain", False) for e in examples]
    plain_wrong = sum(1 for s, top, truth, p in zip(sure, tops, truths, plain, strict=True) if p and s and top != truth)
    return {
        "band": band,
        "count": len(examples),
        "sure": sum(sure),
        "right_sure": right_sure,
        "accuracy_sure": right_sure / sum(sure) if any(sure) else None,
        "coverage": sum(sure) / len(examples) if examples else None,
        "overall": sum(1 for kind, truth in zip(stood, truths, strict=True) if kind == truth) / len(examples)
        if examples
        else None,
        "accuracy": calibration["accuracy"],
        "ece": calibration["ece"],
        "table": calibration["table"],
        "plain": sum(plain),
        "plain_sure_wrong": plain_wrong,
    }


def wilson_lower(right: int, count: int, z: float = 1.96) -> float:
    if not count:
        return 0.0
    p = right / count
    centre = p + z * z / (2 * count)
    spread = z * math.sqrt(p * (1 - p) / count + z * z / (4 * count * count))
    return (centre - spread) / (1 + z * z / count)


def choose_band(probs: list, examples: list) -> tuple:
    """-> (the band, [figures at every candidate band])."""
    each = [figures(probs, examples, band) for band in BANDS]
    low = {f["band"]: wilson_lower(f["right_sure"], f["sure"]) for f in each}
    fit = [f["band"] for f in each if low[f["band"]] >= SURE_TARGET and f["coverage"] >= GOAL["coverage"]]
    return (min(fit) if fit else max(low, key=lambda band: (low[band], band))), each


def confusions(probs: list, examples: list, band: float) -> list:
    """[((truth, tag that stood), count)] of the wrong tags, most common first."""
    stood = [decide(p, e["header"], band)[0] for p, e in zip(probs, examples, strict=True)]
    return Counter(
        (e["kind"], kind) for kind, e in zip(stood, examples, strict=True) if kind != e["kind"]
    ).most_common()


def format_confusions(counted: list) -> str:
    """confusions' list as one line: "truth->tag n, ..." (or "none")."""
    return ", ".join(f"{truth}->{tag} {n}" for (truth, tag), n in counted) or "none"


def meets_goal(result: dict) -> bool:
    return (
        result["accuracy_sure"] is not None
        and result["accuracy_sure"] >= GOAL["accuracy_sure"]
        and result["coverage"] >= GOAL["coverage"]
        and result["overall"] >= GOAL["overall"]
        and result["ece"] <= GOAL["ece"]
        and result["plain_sure_wrong"] == 0
    )


async def rows_of(backend, examples: list) -> list:
    """Probability rows from any backend's kind_probs_async (the LLM's: one request per message)."""
    rows = []
    for example in examples:
        probs = await backend.kind_probs_async(example["text"], **context_of(example))
        rows.append([probs.get(kind, 0.0) for kind in KINDS])
    return rows


def _three(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_figures(result: dict) -> str:
    return (
        f"band {result['band']:.2f}: accuracy where sure {_three(result['accuracy_sure'])} "
        f"({result['right_sure']}/{result['sure']}), coverage {result['coverage']:.3f}, "
        f"overall {result['overall']:.3f} (header fallback), top-choice accuracy {result['accuracy']:.3f}, "
        f"ECE {result['ece']:.3f}"
        + (
            f", sure and wrong on {result['plain_sure_wrong']} of {result['plain']} plain messages"
            if result["plain"]
            else ""
        )
    )


def format_bands(each: list) -> str:
    lines = ["  band  sure-accuracy (Wilson low)  coverage  overall"]
    for f in each:
        accuracy = f"{f['accuracy_sure']:.3f} ({wilson_lower(f['right_sure'], f['sure']):.3f})" if f["sure"] else "-"
        lines.append(f"  {f['band']:.2f}  {accuracy:>26}  {f['coverage']:8.3f}  {f['overall']:7.3f}")
    return "\n".join(lines)
