"""How Jev's two experts become one probability (local.py trains the experts).

The text expert reads only the words; the context expert reads only the nest around them
(soulstack.flock.jev.context). They are combined as a weighted product of experts:

    score_k = a * log p_text(k) + b * log((1 - e) * p_context(k) + e / 6) + c_k
    p(k)    = softmax(tau * score)_k,   tau = exp(t0 - t1 * (1 - familiarity) - t2 * disagreement)

- a, b, e and the biases c are fitted on out-of-fold predictions of the training conversations,
  each message three times: in its own nest, with the nest blanked out, and displaced into another
  conversation's nest. A crow's message can arrive anywhere (a delivery with no request before it,
  a claim after unrelated talk): the written conversations are neater than real nests, and weighed
  on them alone the context would learn to overrule the words. `e` mixes the context expert with
  a flat one, so no context can make a kind impossible. A product, not a sum: a message whose
  words are sure of their kind keeps that certainty unless the context is as sure of another, and
  an uninformative (flat) context changes nothing.
- tau is fitted on the calibration set, messages Jev never trained on. t1, t2 >= 0, so the
  confidence can only fall when the text is unfamiliar (few of its words or character pairs were
  ever seen in training) or when the context prefers another kind than the words do. Below the band,
  the crow's header or the default decides: that is the point of falling.

Every parameter is one of these few numbers, fitted by maximum likelihood (scipy's L-BFGS-B).
"""

import numpy as np

DISAGREEMENT_CAP = 4.0  # nats; beyond this the context is no more "against" the words


def log_softmax(scores):
    shifted = scores - scores.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def disagreement(log_text, log_context):
    """How much more the context believes its own top kind than the text's top kind (0 when they
    agree or the context is flat), capped and scaled to 0-1."""
    rows = np.arange(len(log_text))
    gap = log_context.max(axis=1) - log_context[rows, log_text.argmax(axis=1)]
    return np.minimum(gap, DISAGREEMENT_CAP) / DISAGREEMENT_CAP


def _nll(log_probs, truths) -> float:
    return float(-log_probs[np.arange(len(truths)), truths].mean())


class Combiner:
    def __init__(self, kinds: int):
        self.a, self.b, self.e, self.c = 1.0, 1.0, 0.0, np.zeros(kinds)
        self.t = np.zeros(3)  # t0, t1, t2: tau = 1 until calibrated

    def scores(self, log_text, log_context):
        tempered = np.log((1.0 - self.e) * np.exp(log_context) + self.e / log_context.shape[1])
        return self.a * log_text + self.b * tempered + self.c

    def tau(self, familiarity, disagree):
        return np.exp(self.t[0] - self.t[1] * (1.0 - familiarity) - self.t[2] * disagree)

    def probs(self, log_text, log_context, familiarity):
        tau = self.tau(np.asarray(familiarity), disagreement(log_text, log_context))
        return np.exp(log_softmax(tau[:, None] * self.scores(log_text, log_context)))

    def fit_weights(self, log_text, log_context, truths) -> None:
        """a, b, e, c from out-of-fold predictions (a little L2 on c: the biases are base rates, not a model)."""
        from scipy.optimize import minimize

        kinds = log_text.shape[1]

        def loss(x):
            self.a, self.b, self.e, self.c = x[0], x[1], x[2], x[3:]
            return _nll(log_softmax(self.scores(log_text, log_context)), truths) + 1e-3 * float(x[3:] @ x[3:])

        x0 = np.concatenate([[1.0, 1.0, 0.1], np.zeros(kinds)])
        bounds = [(0.05, 10.0), (0.0, 10.0), (0.001, 1.0)] + [(-5.0, 5.0)] * kinds
        done = minimize(loss, x0, method="L-BFGS-B", bounds=bounds)
        self.a, self.b, self.e, self.c = float(done.x[0]), float(done.x[1]), float(done.x[2]), done.x[3:]

    def fit_temperature(self, log_text, log_context, familiarity, truths) -> None:
        """t0, t1, t2 on messages Jev did not train on: within the training folds the words are as
        familiar as the folds are alike, so how unfamiliar text and disagreement should lower the
        confidence is learned where the text expert has not seen the words."""
        from scipy.optimize import minimize

        scores = self.scores(log_text, log_context)
        unfamiliar, disagree = 1.0 - np.asarray(familiarity), disagreement(log_text, log_context)

        def loss(t):
            tau = np.exp(t[0] - t[1] * unfamiliar - t[2] * disagree)
            return _nll(log_softmax(tau[:, None] * scores), truths)

        done = minimize(loss, np.zeros(3), method="L-BFGS-B", bounds=[(-3.0, 3.0), (0.0, 5.0), (0.0, 5.0)])
        self.t = done.x

    def describe(self) -> str:
        return (
            f"weights: text {self.a:.2f}, context {self.b:.2f} (mixed {self.e:.2f} with a flat one); temperature exp({self.t[0]:.2f} "
            f"- {self.t[1]:.2f} x unfamiliarity - {self.t[2]:.2f} x disagreement)"
        )
