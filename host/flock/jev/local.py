"""Jev, the flock's choice-tagger: a probability for every option of a choice question.

The question Jev answers most is "which kind is this nest message?" over the six kinds a crow
may post. The default backend is local and offline, trained at first use from hand-written nest
conversations (data/train.nests and data/train_second.nests, two writers; data/README.md says who
wrote them and how). Two experts:

- the text expert reads only the words (word and character n-grams, so Chinese needs no
  segmenter): a linear SVM over TF-IDF;
- the context expert reads only the nest around them (soulstack.flock.jev.context: who wrote it, to
  whom, the kind it refers to, the recent kinds, the open request): a logistic regression, trained
  also on every message with its nest blanked out, because a crow's message can arrive anywhere;

and soulstack.flock.jev.combine multiplies them (a weighted product of experts, weights from
out-of-fold predictions) and calibrates the result on data/calibration.nests, written by someone who
never saw the training files and never trained on, with a temperature that falls when the text is
unfamiliar or the context disagrees.
Issue 45 measured why: one model over words and context together let a context prior ("only
`say` before it, no open request") overrule words that said "Count me out".

The training conversations come from two writers (data/train.nests and data/train_second.nests).
A fixed fifth of them (a hash of the conversation's id) is held out and never trained on: the
in-distribution figures. The separate set (data/outside.nests), written by someone
who never saw the training set, neither trains nor calibrates: the figures that count
(soulstack.flock.jev.evaluate). The optional LLM backend (`llm.py`) answers the same question.
"""

import asyncio
import hashlib
import re
import threading
from collections import Counter
from typing import Any

from soulstack.flock.jev.combine import Combiner
from soulstack.flock.jev.context import context_words
from soulstack.flock.jev.dataset import CALIBRATION, SAME_WRITER, SEPARATE, TRAINING, context_of, read_nests

KINDS = ("say", "request", "claim", "deliver", "refer", "decline")  # the crow-postable kinds
HELD_OUT_SHARE = 5  # one conversation in five is held out
FOLDS = 5
BLANK = {"to_role": "", "refers_kind": "", "recent_kinds": [], "open_request": ""}


def load_examples() -> list:
    """The training conversations' messages, every writer's (the held-out fifth included: `split`
    separates it)."""
    return [example for path in TRAINING for example in read_nests(path)]


def load_same_writer() -> list:
    """train.nests' writer, written apart by other rules: never trained on; with the
    calibration set it chooses the band (soulstack.flock.jev.evaluate)."""
    return read_nests(SAME_WRITER)


def load_calibration() -> list:
    """The calibration set (another writer's): never trained on; the combination's temperature is
    fitted on it, and with data/same_writer.nests it chooses the band."""
    return read_nests(CALIBRATION)


def load_separate() -> list:
    """The separate evaluation set: never trained on, never used to fit anything."""
    return read_nests(SEPARATE)


def held_out(example: dict) -> bool:
    digest = hashlib.sha256(example["conv"].encode()).digest()
    return digest[0] % HELD_OUT_SHARE == 0


def split(examples: list) -> tuple:
    """-> (train, held_out), by conversation: the same split on every machine."""
    return [e for e in examples if not held_out(e)], [e for e in examples if held_out(e)]


WORD = re.compile(r"\w+|[^\w\s]")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def analyze(text: str) -> list:
    """The text expert's features: words and word pairs, the first word and the last mark (a
    delivery often starts "Done", a request ends "?"), the length, and character 1-3-grams of each
    space-separated chunk (Chinese needs no segmenter this way)."""
    text = text.lower()
    words = WORD.findall(text)
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    if words:
        grams += [f"first_{words[0]}", f"last_{words[-1]}", f"length_{min(len(words) // 8, 4)}"]
    for chunk in text.split():
        padded = f" {chunk} "
        grams += [padded[i : i + n] for n in (1, 2, 3) for i in range(len(padded) - n + 1)]
    return grams


def known_units(text: str) -> list:
    """What familiarity counts: the words, and in Chinese each pair of characters."""
    units = []
    for word in WORD.findall(text.lower()):
        if CJK.search(word) and len(word) > 1:
            units += [word[i : i + 2] for i in range(len(word) - 1)]
        elif word.isalnum():
            units.append(word)
    return units


def known_set(texts: list) -> set:
    """The units seen in two or more of these texts."""
    counts = Counter(unit for text in texts for unit in set(known_units(text)))
    return {unit for unit, n in counts.items() if n >= 2}


def familiarity(text: str, known: set) -> float:
    """The share of the text's words (Chinese: character pairs) seen in two or more training
    messages; 1.0 for a text of marks only."""
    units = known_units(text)
    return sum(1 for unit in units if unit in known) / len(units) if units else 1.0


def context_analyze(context: dict) -> list:
    return context_words(**context)


class LocalJev:
    """The offline backend. `kind_probs` answers in about a millisecond once trained."""

    name = "local"
    TEXT_C = 0.5  # the experts' regularisation (chosen on the calibration set: docs/events.md)
    CONTEXT_C = 1.0

    def __init__(self, examples: list | None = None, calibration: list | None = None, extra=()):
        """`examples`: the training conversations, a fifth held out (default: both training files);
        `extra`: labelled messages that always train, never held out (the owner's corrections,
        soulstack.flock.jev.learn)."""
        # Imported here: scikit-learn takes a second to import and only Jev needs it.
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold
        from sklearn.svm import LinearSVC

        train, _ = split(examples if examples is not None else load_examples())
        train = train + list(extra)
        self.known = known_set([e["text"] for e in train])
        truths = np.array([KINDS.index(e["kind"]) for e in train])
        groups = np.array([e["conv"] for e in train])
        contexts = [context_of(e) for e in train]
        blanks = [{**c, **BLANK} for c in contexts]
        self.text_vectorizer = TfidfVectorizer(analyzer=analyze, sublinear_tf=True)
        self.context_vectorizer = TfidfVectorizer(analyzer=context_analyze, use_idf=False, norm=None)
        texts = self.text_vectorizer.fit_transform([e["text"] for e in train])
        real = self.context_vectorizer.fit_transform(contexts)
        blank = self.context_vectorizer.transform(blanks)

        def text_model():
            return LinearSVC(C=self.TEXT_C, random_state=0)

        def context_model():
            # newton-cg: the same optimum as lbfgs on these 53 columns, in a tenth of the time
            return LogisticRegression(C=self.CONTEXT_C, solver="newton-cg", max_iter=1000)

        # Out-of-fold predictions of both experts, folds by conversation (messages of one nest look
        # alike): what the combination's weights are fitted on, never the experts' own training rows.
        from scipy.sparse import vstack

        # Each held-out message is also shown displaced: with the context of another message of the
        # same fold (a rotation by half the fold, so almost always another conversation's).
        oof_text, oof_real, oof_blank, oof_moved = (np.zeros((len(train), len(KINDS))) for _ in range(4))
        for fit_rows, rows in GroupKFold(n_splits=FOLDS).split(texts, groups=groups):
            words = text_model().fit(texts[fit_rows], truths[fit_rows])
            oof_text[rows] = self._spread(words, words.decision_function(texts[rows]))
            nest = context_model().fit(vstack([real[fit_rows], blank[fit_rows]]), np.tile(truths[fit_rows], 2))
            moved = np.roll(rows, len(rows) // 2)
            for out, matrix in ((oof_real, real[rows]), (oof_blank, blank[rows]), (oof_moved, real[moved])):
                out[rows] = self._spread(nest, nest.predict_log_proba(matrix), floor=-30.0)
        self.combiner = Combiner(len(KINDS))
        log_text = self._log_softmax(np.vstack([oof_text] * 3))
        self.combiner.fit_weights(log_text, np.vstack([oof_real, oof_blank, oof_moved]), np.tile(truths, 3))
        self.text_model = text_model().fit(texts, truths)
        self.context_model = context_model().fit(vstack([real, blank]), np.tile(truths, 2))
        held = calibration if calibration is not None else load_calibration()
        if held:
            log_text, log_context, known = self._experts([e["text"] for e in held], [context_of(e) for e in held])
            self.combiner.fit_temperature(
                log_text, log_context, known, np.array([KINDS.index(e["kind"]) for e in held])
            )

    @staticmethod
    def _spread(model, rows, floor: float = -1e3):
        """A model's columns in KINDS order (a kind missing from a fold gets `floor`)."""
        import numpy as np

        out = np.full((len(rows), len(KINDS)), floor)
        out[:, list(model.classes_)] = rows
        return out

    @staticmethod
    def _log_softmax(scores):
        from soulstack.flock.jev.combine import log_softmax

        return log_softmax(scores)

    def _experts(self, texts: list, contexts: list) -> tuple:
        """-> (log p_text, log p_context, familiarity) rows for these messages."""
        import numpy as np
        from sklearn import config_context

        # Our own input is always well-formed; skipping scikit-learn's checks halves the time per message.
        with config_context(assume_finite=True, skip_parameter_validation=True):
            scores = self.text_model.decision_function(self.text_vectorizer.transform(texts))
            nest = self.context_model.predict_log_proba(self.context_vectorizer.transform(contexts))
        log_text = self._log_softmax(self._spread(self.text_model, scores))
        log_context = self._spread(self.context_model, nest, floor=-30.0)
        return log_text, log_context, np.array([familiarity(text, self.known) for text in texts])

    def explain(self, texts: list, contexts: list) -> dict:
        """Each expert's own probabilities and the text's familiarity (jev-report, the tests)."""
        import numpy as np

        log_text, log_context, known = self._experts(texts, contexts)
        return {"text": np.exp(log_text), "context": np.exp(log_context), "familiarity": known}

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
        context: dict[str, Any] = dict(author_role=author_role, to_role=to_role, refers_kind=refers_kind)
        context.update(recent_kinds=list(recent_kinds), open_request=open_request)
        row = self.combiner.probs(*self._experts([text], [context]))[0]
        return {kind: float(p) for kind, p in zip(KINDS, row, strict=True)}

    async def kind_probs_async(self, text: str, *context, **named) -> dict:
        return self.kind_probs(text, *context, **named)  # fast enough to run on the loop

    def probs_many(self, examples: list):
        """Rows of probabilities in KINDS order, for measuring."""
        return self.combiner.probs(*self._experts([e["text"] for e in examples], [context_of(e) for e in examples]))


_shared = None
_shared_lock = threading.Lock()


def local_jev() -> LocalJev:
    """The one trained local Jev of this process (training takes a few seconds)."""
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
        self.learner = None  # soulstack.flock.jev.learn.Learner, set by the Tagger that has the log

    def warm_up(self) -> None:
        if self._trained is None:
            self._trained = asyncio.ensure_future(asyncio.to_thread(local_jev))

    def replace(self, jev: "LocalJev") -> None:
        """A re-fitted Jev (the owner's corrections) takes over from the next question on."""
        done = asyncio.get_running_loop().create_future()
        done.set_result(jev)
        self._trained = done

    async def current(self) -> "LocalJev":
        self.warm_up()
        return await asyncio.shield(self._trained)

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
    correct = [KINDS[index] == truth for index, truth in zip(chosen, truths, strict=True)]
    table = reliability(probabilities.max(axis=1), correct)
    return {
        "count": len(truths),
        "accuracy": float(np.mean(correct)),
        "ece": expected_calibration_error(table),
        "table": table,
    }
