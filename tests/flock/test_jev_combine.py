"""Jev's combination (soulstack.flock.jev.combine) by hand and as fitted: a flat context changes
nothing, a context that prefers another kind lowers the confidence, unfamiliar words lower it,
and the words weigh more than the nest."""

import numpy as np
import pytest

from soulstack.flock.jev.combine import Combiner, disagreement, log_softmax
from soulstack.flock.jev.local import KINDS, familiarity, local_jev
from soulstack.flock.jev.tagging import DEFAULT_BAND


def logs(*rows):
    return np.log(np.array(rows, float))


SURE_DECLINE = [0.02, 0.02, 0.02, 0.02, 0.02, 0.90]
FLAT = [1 / 6] * 6
SAYS_SAY = [0.90, 0.02, 0.02, 0.02, 0.02, 0.02]


def test_disagreement_is_how_much_the_context_prefers_another_kind():
    text = logs(SURE_DECLINE, SURE_DECLINE, SURE_DECLINE)
    context = logs(FLAT, SURE_DECLINE, SAYS_SAY)
    assert disagreement(text, context) == pytest.approx([0.0, 0.0, np.log(45) / 4])


def test_the_confidence_falls_with_disagreement_and_unfamiliar_words():
    combiner = Combiner(len(KINDS))
    combiner.t = np.array([0.0, 1.0, 1.0])
    text = logs(SURE_DECLINE, SURE_DECLINE)
    flat, against = logs(FLAT, FLAT), logs(SAYS_SAY, SAYS_SAY)
    familiar, unknown = combiner.probs(text, flat, [1.0, 1.0]), combiner.probs(text, flat, [1.0, 0.0])
    assert familiar[0].argmax() == KINDS.index("decline") and familiar[0].max() == pytest.approx(0.9)
    assert unknown[1].max() < familiar[0].max()  # the same words, never seen: less sure
    disagreed = combiner.probs(text, against, [1.0, 1.0])
    assert disagreed[0].max() < familiar[0].max()


def test_a_flat_context_leaves_the_words_alone():
    combiner = Combiner(len(KINDS))
    combiner.a, combiner.b, combiner.e = 1.0, 0.7, 0.2
    probs = combiner.probs(logs(SURE_DECLINE), logs(FLAT), [1.0])
    assert probs[0] == pytest.approx(np.exp(log_softmax(logs(SURE_DECLINE)))[0])


def test_the_fitted_combination_weighs_the_words_over_the_nest():
    combiner = local_jev().combiner
    assert combiner.a > 2 * combiner.b and combiner.e > 0.05
    # Disagreement lowers the confidence, as fitted on the calibration set. Unfamiliar words may
    # (t1 >= 0 by its bounds; fitted on the second writer's set it is ~0): words Jev never saw
    # already leave the text expert flat, and a nest alone does not make Jev sure.
    assert combiner.t[2] > 0 and combiner.t[1] >= 0
    after_request = dict(author_role="crow", recent_kinds=["request"], open_request="to_me")
    unknown = local_jev().kind_probs("zxqv blorfington wibble", **after_request)
    assert max(unknown.values()) < DEFAULT_BAND


def test_familiarity_counts_known_words_and_chinese_character_pairs():
    known = local_jev().known
    assert familiarity("thanks, done", known) == 1.0
    assert familiarity("zxqv blorfington", known) == 0.0
    assert familiarity("三天", known) == 1.0 and familiarity("三天鸮", known) == 0.5  # 三天 known, 天鸮 not
    assert familiarity("…", known) == 1.0  # marks only: nothing to judge
