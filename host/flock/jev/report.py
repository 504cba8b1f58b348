"""`soulstack flock jev-report`: how well Jev's probabilities mean what they say.

Two measurements, each a reliability table (10 bins of Jev's top probability),
accuracy and ECE:
- the held-out fifth of the shipped examples (the local Jev never trained on it);
- the decisions in `<data>/jev.jsonl`, against the owner's corrections: a
  corrected message's truth is the owner's kind; an uncorrected one counts as
  confirmed (its kind stood). The second is the calibration experiment on
  real traffic; it means more the more messages the owner has looked at.
A reliability diagram of both is written as a PNG (matplotlib, no display).
"""

from pathlib import Path

from soulstack.flock.jev.local import KINDS, load_examples, local_jev, measure, split
from soulstack.flock.jev.tagging import JevLog


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


def report(data_dir: Path, png: Path) -> str:
    _, held = split(load_examples())
    results = {"held-out": measure(local_jev().probs_many(held), [e["kind"] for e in held])}
    out = [f"held-out split of the shipped set: {len(held)} examples", format_table(results["held-out"])]
    log_path = Path(data_dir) / "jev.jsonl"
    rows, truths, corrected = from_log(JevLog(log_path).read())
    out.append(f"the log ({log_path}): {len(rows)} messages, {corrected} corrected by the owner")
    if rows:
        results["log"] = measure(rows, truths)
        out.append(format_table(results["log"]))
    draw(results, png)
    out.append(f"reliability diagram: {png}")
    return "\n".join(out)
