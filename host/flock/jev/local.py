"""Jev, the flock's choice-tagger: a probability for every option of a choice question.

The question Jev answers most is "which kind is this nest message?" over the six
kinds a crow may post. The default backend is local and offline: a classifier
trained at first use from hand-written nest conversations (data/train.nests; data/README.md
says who wrote them and how), reading the text (word and character n-grams, so Chinese
needs no segmenter) and its context (soulstack.flock.jev.context: who wrote it, who it is
addressed to, the kind it refers to, the nest's recent kinds and whether a request is open
for its author). Its probabilities are calibrated by scikit-learn's CalibratedClassifierCV
(temperature scaling on out-of-fold scores, folds by conversation), because the tagging rule
compares them with a band: 0.8 has to mean right about four times in five.

A fixed fifth of the conversations (chosen by a hash of the conversation's id, so no
conversation is on both sides) is held out and never trained on: the in-distribution figures.
The separate set (data/separate.nests) is written apart and never trains either: the figures
that count (soulstack.flock.jev.evaluate). The optional LLM backend (`llm.py`) answers the same
question from a model's logprobs.
"""

import asyncio
import hashlib
import re
import threading

from soulstack.flock.jev.context import context_words
from soulstack.flock.jev.dataset import SEPARATE, TRAIN, context_of, read_nests

KINDS = ("say", "request", "claim", "deliver", "refer", "decline")  # the crow-postable kinds
HELD_OUT_SHARE = 5  # one conversation in five is held out
FOLDS = 5


def load_examples(path=TRAIN) -> list:
    """The training conversations' messages (the held-out fifth included: `split` separates it)."""
    return read_nests(path)


def load_separate() -> list:
    """The separate evaluation set: never trained on, never used to fit a parameter of the model."""
    return read_nests(SEPARATE)


def held_out(example: dict) -> bool:
    digest = hashlib.sha256(example["conv"].encode()).digest()
    return digest[0] % HELD_OUT_SHARE == 0


def split(examples: list) -> tuple:
    """-> (train, held_out), by conversation: the same split on every machine."""
    return [e for e in examples if not held_out(e)], [e for e in examples if held_out(e)]


def features(text: str, context: dict) -> str:
    return " ".join(context_words(**context)) + " ||| " + text


WORD = re.compile(r"\w+|[^\w\s]")


def analyze(value: str) -> list:
    """Features of one `features()` string: its context words, the text's words and word pairs,
    the first word and the last mark (a delivery often starts "Done", a request ends "?"), and
    character 1-3-grams of each space-separated chunk (Chinese needs no segmenter this way)."""
    context, text = value.split(" ||| ", 1)
    text = text.lower()
    words = WORD.findall(text)
    grams = context.split() + words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    if words:
        grams += [f"first_{words[0]}", f"last_{words[-1]}", f"length_{min(len(words) // 8, 4)}"]
    for chunk in text.split():
        padded = f" {chunk} "
        grams += [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1)]
    return grams


def build_classifier(groups):
    """-> (vectorizer, calibrated model), unfitted; `groups` keeps a conversation in one fold."""
    # Imported here: scikit-learn takes a second to import and only Jev needs it.
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.model_selection import GroupKFold
    from sklearn.svm import LinearSVC

    # One vectorizer with one analyzer: a single sparse transform per message keeps tagging fast.
    vectorizer = TfidfVectorizer(analyzer=analyze, sublinear_tf=True)
    # A linear SVM trains in a fraction of a second; its scores become probabilities by temperature
    # scaling fitted on out-of-fold predictions. Folds by conversation: messages of one nest look
    # alike, and folds by message would teach the temperature that Jev is surer than it is.
    # ensemble=False keeps one model to predict with: tagging costs one transform and one dot product.
    folds = list(GroupKFold(n_splits=FOLDS).split(groups, groups=groups))
    model = CalibratedClassifierCV(LinearSVC(C=0.5, random_state=0), method="temperature", cv=folds, ensemble=False)
    return vectorizer, model


class LocalJev:
    """The offline backend. `kind_probs` answers in well under a millisecond once trained."""

    name = "local"

    def __init__(self, examples: list | None = None):
        train, _ = split(examples if examples is not None else load_examples())
        self.vectorizer, self.model = build_classifier([e["conv"] for e in train])
        matrix = self.vectorizer.fit_transform([features(e["text"], context_of(e)) for e in train])
        self.model.fit(matrix, [e["kind"] for e in train])
        self.columns = [list(self.model.classes_).index(kind) for kind in KINDS]

    def kind_probs(
        self,
        text: str,
        author_role: str = "",
        to_role: str = "",
        refers_kind: str = "",
        recent_kinds=(),
        open_request: str = "",
    ) -> dict:
        """{kind: probability} over KINDS, summing to 1."""
        context = dict(author_role=author_role, to_role=to_role, refers_kind=refers_kind)
        row = self._probs([features(text, {**context, "recent_kinds": recent_kinds, "open_request": open_request})])
        return {kind: float(row[0][column]) for kind, column in zip(KINDS, self.columns)}

    async def kind_probs_async(self, text: str, *context, **named) -> dict:
        return self.kind_probs(text, *context, **named)  # fast enough to run on the loop

    def probs_many(self, examples: list):
        """Rows of probabilities in KINDS order, for measuring."""
        return self._probs([features(e["text"], context_of(e)) for e in examples])[:, self.columns]

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

    async def kind_probs_async(self, text: str, *context, **named) -> dict:
        self.warm_up()
        jev = await asyncio.shield(self._trained)  # a cancelled caller must not cancel the training
        return jev.kind_probs(text, *context, **named)


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
