"""`soulstack flock jev-report`: how well Jev's probabilities mean what they say.

Three measurements, each a reliability table (10 bins of Jev's top probability), accuracy and ECE:
- in distribution: the held-out fifth of the training conversations (the local Jev never trained
  on them, but they were written with the rest);
- the separate set (data/separate.nests), written apart by other rules and never trained on: the
  figures that count, with the band chosen from them (soulstack.flock.jev.evaluate);
- the decisions in `<data>/jev.jsonl`, against the owner's corrections: a
  corrected message's truth is the owner's kind; an uncorrected one counts as
  confirmed (its kind stood). The last is the calibration experiment on
  real traffic; it means more the more messages the owner has looked at.
A reliability diagram of all three is written as a PNG (matplotlib, no display).
"""

from pathlib import Path

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.local import KINDS, load_examples, load_separate, local_jev, measure, split
from soulstack.flock.jev.tagging import DEFAULT_BAND, JevLog


def from_log(entries: list) -> tuple:
    """-> (probability rows, truths, corrected count) from jev.jsonl entries."""
    decisions, corrections = {}, {}
    for entry in entries:
        if entry.get("question") == "kind" and entry.get("probs"):
            decisions[entry["msg_id"]] = entry  # a later decision for the same id replaces an earlier one
        elif entry.get("question") == "correction":
            corrections[entry["msg_id"]] = entry["kind"]
    rows, truths = [], []
    for msg_id, entry in decisions.items():
        rows.append([entry["probs"].get(kind, 0.0) for kind in KINDS])
        truths.append(corrections.get(msg_id, entry.get("kind")))
    return rows, truths, sum(1 for msg_id in decisions if msg_id in corrections)


def format_table(result: dict) -> str:
    lines = ["  bin        count  confidence  accuracy"]
    for row in result["table"]:
        if row["count"]:
            lines.append(
                f"  {row['lo']:.1f}-{row['hi']:.1f}  {row['count']:6d}  {row['confidence']:10.3f}  {row['accuracy']:8.3f}"
            )
        else:
            lines.append(f"  {row['lo']:.1f}-{row['hi']:.1f}  {0:6d}           -         -")
    if result["count"]:
        lines.append(f"  accuracy {result['accuracy']:.3f}  ECE {result['ece']:.3f}")
    return "\n".join(lines)


def draw(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only; never a window
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(5, 5))
    axes.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
    for label, result in results.items():
        points = [(row["confidence"], row["accuracy"]) for row in result["table"] if row["count"]]
        if points:
            axes.plot(*zip(*points), marker="o", label=f"{label} (ECE {result['ece']:.3f})")
    axes.set_xlabel("Jev's probability of its choice")
    axes.set_ylabel("how often it was right")
    axes.set_title("Jev: reliability")
    axes.legend(loc="upper left")
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def measured(jev) -> dict:
    """Jev's figures in distribution and on the separate set, at the shipped band, and the band
    the separate set chooses (bench-jev prints the same)."""
    _, held = split(load_examples())
    separate = load_separate()
    held_probs = evaluate.as_tagged(jev.probs_many(held), held)
    separate_probs = evaluate.as_tagged(jev.probs_many(separate), separate)
    band, bands = evaluate.choose_band(separate_probs, separate)
    return {
        "held": evaluate.figures(held_probs, held, DEFAULT_BAND),
        "separate": evaluate.figures(separate_probs, separate, DEFAULT_BAND),
        "chosen_band": band,
        "bands": bands,
        "confusions": evaluate.confusions(separate_probs, separate, DEFAULT_BAND),
        "cross_check": evaluate.cross_check(separate_probs, separate),
        "by_lang": {
            lang: evaluate.figures(
                [p for p, e in zip(separate_probs, separate) if e["lang"] == lang],
                [e for e in separate if e["lang"] == lang],
                DEFAULT_BAND,
            )
            for lang in ("en", "zh")
        },
    }


def format_measured(result: dict) -> str:
    held, separate = result["held"], result["separate"]
    out = [
        f"in distribution: the held-out fifth of the training conversations, {held['count']} messages",
        "  " + evaluate.format_figures(held),
        format_table(held),
        f"separate set (written apart, never trained on): {separate['count']} messages",
        "  " + evaluate.format_figures(separate),
        *(f"  {lang}: " + evaluate.format_figures(part) for lang, part in result["by_lang"].items()),
        format_table(separate),
        "the band on the separate set (chosen: the lowest whose sure tags stay right 0.90 of the time "
        "at the low end of a 95% interval, sure on half or more):",
        evaluate.format_bands(result["bands"]),
        f"  chosen {result['chosen_band']:.2f}; the flock's default is {DEFAULT_BAND:.2f}",
        "  the same choice on one half of its conversations, measured on the other half:",
        *(f"    chose {band:.2f}, then " + evaluate.format_figures(half) for band, half in result["cross_check"]),
        "wrong tags on the separate set (true kind -> the tag that stood): "
        + (", ".join(f"{truth}->{tag} {n}" for (truth, tag), n in result["confusions"]) or "none"),
        "goal (accuracy where sure >= 0.85, coverage >= 0.5, overall >= 0.75, ECE <= 0.05) on the separate set: "
        + ("met" if evaluate.meets_goal(separate) else "NOT met"),
    ]
    return "\n".join(out)


def report(data_dir: Path, png: Path) -> str:
    result = measured(local_jev())
    results = {"held-out conversations": result["held"], "separate set": result["separate"]}
    out = [format_measured(result)]
    log_path = Path(data_dir) / "jev.jsonl"
    rows, truths, corrected = from_log(JevLog(log_path).read())
    out.append(f"the log ({log_path}): {len(rows)} messages, {corrected} corrected by the owner")
    if rows:
        results["log"] = measure(rows, truths)
        out.append(format_table(results["log"]))
    draw(results, png)
    out.append(f"reliability diagram: {png}")
    return "\n".join(out)
