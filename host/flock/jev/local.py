"""Jev, the flock's choice-tagger: a probability for every option of a choice question.

The question Jev answers most is "which kind is this nest message?" over the six
kinds a crow may post. The default backend is local and offline: a classifier
trained at first use from `examples.jsonl` (our own labelled nest messages,
English and Chinese), reading the text (word and character n-grams, so Chinese
needs no tokenizer) and its context (who wrote it, who it is addressed to, what
kind of message it answers). Its probabilities are calibrated by scikit-learn's
CalibratedClassifierCV (temperature scaling, 5 folds), because the tagging rule compares
them with a band: 0.8 has to mean right about four times in five.

A fixed fifth of the examples (chosen by a hash of the text) is held out and
never trained on; `tools/bench-jev` and `soulstack flock jev-report` measure on it.
The optional LLM backend (`llm.py`) answers the same question from a model's
logprobs.
"""

import asyncio
import hashlib
import json
import re
import threading
from pathlib import Path

KINDS = ("say", "request", "claim", "deliver", "refer", "decline")  # the crow-postable kinds
EXAMPLES = Path(__file__).with_name("examples.jsonl")
HELD_OUT_SHARE = 5  # one example in five is held out


def load_examples(path: Path = EXAMPLES) -> list:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def held_out(example: dict) -> bool:
    digest = hashlib.sha256(example["text"].encode()).digest()
    return digest[0] % HELD_OUT_SHARE == 0


def split(examples: list) -> tuple:
    """-> (train, held_out): the same split on every machine."""
    return [e for e in examples if not held_out(e)], [e for e in examples if held_out(e)]


def context_words(author_role: str, to_role: str, refers_kind: str) -> str:
    """The message's context as words the word vectorizer reads beside the text."""
    return f"ctx_author_{author_role or 'none'} ctx_to_{to_role or 'none'} ctx_ref_{refers_kind or 'none'}"


def features(example: dict) -> str:
    return (
        context_words(example.get("author", ""), example.get("to", ""), example.get("refers_to", ""))
        + " ||| "
        + example["text"]
    )


WORD = re.compile(r"\w+|[^\w\s]")


def analyze(value: str) -> list:
    """Features of one `features()` string: its context words, the text's words and word pairs,
    and character 1-3-grams of each space-separated chunk (Chinese needs no tokenizer this way)."""
    context, text = value.split(" ||| ", 1)
    text = text.lower()
    words = WORD.findall(text)
    grams = context.split() + words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    for chunk in text.split():
        padded = f" {chunk} "
        grams += [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1)]
    return grams


def build_classifier():
    """-> (vectorizer, calibrated model), unfitted."""
    # Imported here: scikit-learn takes a second to import and only Jev needs it.
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    # One vectorizer with one analyzer: a single sparse transform per message keeps tagging fast.
    vectorizer = TfidfVectorizer(analyzer=analyze, sublinear_tf=True)
    # A linear SVM trains in a fraction of a second; its scores become probabilities by temperature
    # scaling fitted on out-of-fold predictions. ensemble=False keeps one model to predict with, so
    # tagging costs one transform and one dot product.
    model = CalibratedClassifierCV(LinearSVC(C=0.5), method="temperature", cv=5, ensemble=False)
    return vectorizer, model


class LocalJev:
    """The offline backend. `kind_probs` answers in well under a millisecond once trained."""

    name = "local"

    def __init__(self, examples: list | None = None):
        train, _ = split(examples if examples is not None else load_examples())
        self.vectorizer, self.model = build_classifier()
        self.model.fit(self.vectorizer.fit_transform([features(e) for e in train]), [e["kind"] for e in train])
        self.columns = [list(self.model.classes_).index(kind) for kind in KINDS]

    def kind_probs(self, text: str, author_role: str = "", to_role: str = "", refers_kind: str = "") -> dict:
        """{kind: probability} over KINDS, summing to 1."""
        row = self._probs([context_words(author_role, to_role, refers_kind) + " ||| " + text])[0]
        return {kind: float(row[column]) for kind, column in zip(KINDS, self.columns)}

    async def kind_probs_async(
        self, text: str, author_role: str = "", to_role: str = "", refers_kind: str = ""
    ) -> dict:
        return self.kind_probs(text, author_role, to_role, refers_kind)  # fast enough to run on the loop

    def probs_many(self, examples: list):
        """Rows of probabilities in KINDS order, for measuring."""
        return self._probs([features(e) for e in examples])[:, self.columns]

    def _probs(self, strings: list):
        from sklearn import config_context

        # Our own input is always well-formed; skipping scikit-learn's checks halves the time per message.
        with config_context(assume_finite=True, skip_parameter_validation=True):
            return self.model.predict_proba(self.vectorizer.transform(strings))


_shared = None
_shared_lock = threading.Lock()


def local_jev() -> LocalJev:
    """The one trained local Jev of this process (training takes about a second)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalJev()
        return _shared


class StartingJev:
    """The shared local Jev for a server: training starts in a worker thread with the first
    question (or `warm_up`), so the server answers other requests at once; tags wait for it."""

    name = "local"

    def __init__(self):
        self._trained = None

    def warm_up(self) -> None:
        if self._trained is None:
            self._trained = asyncio.ensure_future(asyncio.to_thread(local_jev))

    async def kind_probs_async(
        self, text: str, author_role: str = "", to_role: str = "", refers_kind: str = ""
    ) -> dict:
        self.warm_up()
        jev = await asyncio.shield(self._trained)  # a cancelled caller must not cancel the training
        return jev.kind_probs(text, author_role, to_role, refers_kind)


# --- measuring calibration --------------------------------------------------
BINS = 10


def reliability(confidences, correct, bins: int = BINS) -> list:
    """Per confidence bin: {lo, hi, count, confidence (mean), accuracy}. Bins are (lo, hi]; 0 joins the first."""
    import numpy as np  # here, not at the top: the server imports this module and starts faster without it

    confidences, correct = np.asarray(confidences, float), np.asarray(correct, float)
    table = []
    for index in range(bins):
        lo, hi = index / bins, (index + 1) / bins
        inside = (confidences > lo) & (confidences <= hi) if index else (confidences <= hi)
        count = int(inside.sum())
        table.append(
            {
                "lo": lo,
                "hi": hi,
                "count": count,
                "confidence": float(confidences[inside].mean()) if count else None,
                "accuracy": float(correct[inside].mean()) if count else None,
            }
        )
    return table


def expected_calibration_error(table: list) -> float:
    """ECE: the count-weighted mean gap between confidence and accuracy over the bins."""
    total = sum(row["count"] for row in table)
    if not total:
        return 0.0
    return sum(row["count"] * abs(row["confidence"] - row["accuracy"]) for row in table if row["count"]) / total


def measure(probabilities, truths) -> dict:
    """Accuracy, ECE and the reliability table of top-choice predictions against true kinds."""
    import numpy as np

    probabilities = np.asarray(probabilities, float)
    if not len(probabilities):
        return {"count": 0, "accuracy": None, "ece": None, "table": reliability([], [])}
    chosen = probabilities.argmax(axis=1)
    correct = [KINDS[index] == truth for index, truth in zip(chosen, truths)]
    table = reliability(probabilities.max(axis=1), correct)
    return {
        "count": len(truths),
        "accuracy": float(np.mean(correct)),
        "ece": expected_calibration_error(table),
        "table": table,
    }
