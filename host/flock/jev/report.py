"""`soulstack flock jev-report`: how well Jev's probabilities mean what they say.

Five measurements, each with accuracy and ECE (the reliability tables: 10 bins of Jev's top probability):
- in distribution: the held-out fifth of the training conversations, both writers' (the local Jev
  never trained on them, but they were written with the rest);
- the calibration set (data/calibration.nests), by another writer, who never saw the training
  files, never trained on: the combination's temperature is fitted on it;
- the band sets: that one and data/same_writer.nests (train.nests' writer, by other rules,
  never trained on); the band is chosen on both (soulstack.flock.jev.evaluate);
- the separate set (data/outside.nests), written by someone who never saw the training set and
  fitted on by nothing: the figures that count;
- the decisions in `<data>/jev.jsonl`, against the owner's corrections: a
  corrected message's truth is the owner's kind; an uncorrected one counts as
  confirmed (its kind stood). The last is the calibration experiment on
  real traffic; it means more the more messages the owner has looked at.
Then the owner's corrections, what the shipped Jev says of each now, and each background re-fit's
outcome (soulstack.flock.jev.learn). A reliability diagram is written as a PNG (matplotlib, no display).
"""

from pathlib import Path

from soulstack.flock.jev import evaluate
from soulstack.flock.jev.judge_fit import describe
from soulstack.flock.jev.learn import corrected_examples
from soulstack.flock.jev.local import (
    KINDS,
    load_calibration,
    load_examples,
    load_same_writer,
    load_separate,
    local_jev,
    measure,
    split,
)
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
            axes.plot(*zip(*points, strict=True), marker="o", label=f"{label} (ECE {result['ece']:.3f})")
    axes.set_xlabel("Jev's probability of its choice")
    axes.set_ylabel("how often it was right")
    axes.set_title("Jev: reliability")
    axes.legend(loc="upper left")
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def measured(jev) -> dict:
    """Jev's figures in distribution, on the calibration set (which chooses the band) and on the
    separate set, at the shipped band (bench-jev prints the same)."""
    _, held = split(load_examples())
    calibration, separate, same_writer = load_calibration(), load_separate(), load_same_writer()
    held_probs = evaluate.as_tagged(jev.probs_many(held), held)
    calibration_probs = evaluate.as_tagged(jev.probs_many(calibration), calibration)
    separate_probs = evaluate.as_tagged(jev.probs_many(separate), separate)
    same_writer_probs = evaluate.as_tagged(jev.probs_many(same_writer), same_writer)
    band, bands = evaluate.choose_band(calibration_probs + same_writer_probs, calibration + same_writer)
    return {
        "held": evaluate.figures(held_probs, held, DEFAULT_BAND),
        "calibration": evaluate.figures(calibration_probs, calibration, DEFAULT_BAND),
        "separate": evaluate.figures(separate_probs, separate, DEFAULT_BAND),
        "same_writer": evaluate.figures(same_writer_probs, same_writer, DEFAULT_BAND),
        "chosen_band": band,
        "bands": bands,
        "separate_bands": [evaluate.figures(separate_probs, separate, b) for b in evaluate.BANDS],
        "confusions": evaluate.confusions(separate_probs, separate, DEFAULT_BAND),
        "by_lang": {
            lang: evaluate.figures(
                [p for p, e in zip(separate_probs, separate, strict=True) if e["lang"] == lang],
                [e for e in separate if e["lang"] == lang],
                DEFAULT_BAND,
            )
            for lang in ("en", "zh")
        },
        "design": getattr(getattr(jev, "combiner", None), "describe", lambda: "")(),
    }


def format_measured(result: dict) -> str:
    held, calibration, separate = result["held"], result["calibration"], result["separate"]
    goal = evaluate.GOAL
    out = [
        *([f"the local Jev: {result['design']}"] if result["design"] else []),
        f"in distribution: the held-out fifth of the training conversations, {held['count']} messages",
        "  " + evaluate.format_figures(held),
        format_table(held),
        f"calibration set (another writer, blind to the training files; never trained on, the temperature "
        f"is fitted on it): {calibration['count']} messages",
        "  " + evaluate.format_figures(calibration),
        f"train.nests' writer, by other rules (data/same_writer.nests; never trained on): "
        f"{result['same_writer']['count']} messages",
        "  " + evaluate.format_figures(result["same_writer"]),
        f"the band on both (chosen: the lowest whose sure tags stay right {evaluate.SURE_TARGET:.2f} of the time "
        f"at the low end of a 95% interval, sure on {goal['coverage']:.2f} or more):",
        evaluate.format_bands(result["bands"]),
        f"  chosen {result['chosen_band']:.2f}; the flock's default for the local Jev is {DEFAULT_BAND:.2f}",
        f"separate set (written by someone who never saw the training set; never trained or fitted on): "
        f"{separate['count']} messages",
        "  " + evaluate.format_figures(separate),
        *(f"  {lang}: " + evaluate.format_figures(part) for lang, part in result["by_lang"].items()),
        format_table(separate),
        "  the separate set at every band (for reading only: the band is not chosen here):",
        evaluate.format_bands(result["separate_bands"]),
        "wrong tags on the separate set (true kind -> the tag that stood): "
        + evaluate.format_confusions(result["confusions"]),
        f"goal (accuracy where sure >= {goal['accuracy_sure']:.2f}, coverage >= {goal['coverage']:.2f}, overall >= "
        f"{goal['overall']:.2f}, ECE <= {goal['ece']:.2f}, no sure-and-wrong plain message) on the separate set: "
        + ("met" if evaluate.meets_goal(separate) else "NOT met"),
    ]
    return "\n".join(out)


def format_judge(judged: dict) -> str:
    """jev-report --judge: an LLM backend's fit and its figures on the separate set (judge_fit)."""
    fit, separate = judged["fit"], judged["separate"]
    goal = "met" if evaluate.meets_goal(separate) else "NOT met"
    return "\n".join(
        [
            f"{judged['what']} ({fit.model}, fitted on {fit.messages} training messages: {describe(fit)}, "
            f"band {fit.band:.2f}) on the separate set: {separate['count']} messages",
            "  " + evaluate.format_figures(separate),
            format_table(separate),
            "  wrong tags (true kind -> the tag that stood): " + evaluate.format_confusions(judged["confusions"]),
            f"  answered by the local Jev instead (the model gave no answer or failed): {judged['unanswered']}",
            f"  cost: {judged['cost']}",
            f"  goal on the separate set: {goal}",
        ]
    )


def format_corrections(entries: list, jev, shown: int = 20) -> str:
    """The owner's corrections (the latest `shown`), what the shipped local Jev now says of each,
    and every background re-fit's outcome (soulstack.flock.jev.learn)."""
    examples = corrected_examples(entries)
    if not examples:
        return "corrections: none yet (POST /api/nests/{id}/messages/{msg_id}/kind teaches Jev)"
    tops = [KINDS[row.argmax()] for row in jev.probs_many(examples)]
    right = sum(1 for top, e in zip(tops, examples, strict=True) if top == e["kind"])
    out = [
        f"corrections: {len(examples)} messages; the shipped local Jev (without them) now gets {right} right",
        *(
            f"  {e['msg_id']}: {e['was']} -> {e['kind']} (shipped Jev: {top}) {e['text'][:60]!r}"
            for top, e in list(zip(tops, examples, strict=True))[-shown:]
        ),
    ]
    for entry in (e for e in entries if e.get("question") == "relearn"):
        out.append(
            f"  re-fit at {entry.get('ts', '?')} with {entry['corrections']}: kept the {entry['kept']} model"
            + (
                f" (calibration log loss {entry['calibration_log_loss_before']:.3f} -> "
                f"{entry['calibration_log_loss_after']:.3f}; {entry['corrected_right_after']} of the corrected "
                f"right after, {entry['seconds']} s)"
                if "calibration_log_loss_after" in entry
                else f" ({entry.get('why', '')})"
            )
        )
    return "\n".join(out)


def report(data_dir: Path, png: Path) -> str:
    result = measured(local_jev())
    results = {"held-out conversations": result["held"], "separate set": result["separate"]}
    out = [format_measured(result)]
    log_path = Path(data_dir) / "jev.jsonl"
    entries = JevLog(log_path).read()
    rows, truths, corrected = from_log(entries)
    out.append(f"the log ({log_path}): {len(rows)} messages, {corrected} corrected by the owner")
    if rows:
        results["log"] = measure(rows, truths)
        out.append(format_table(results["log"]))
    out.append(format_corrections(entries, local_jev()))
    draw(results, png)
    out.append(f"reliability diagram: {png}")
    return "\n".join(out)
