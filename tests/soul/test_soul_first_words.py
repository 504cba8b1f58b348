"""first_words.py: a text block's spoken words, released sentence by sentence as it streams, where the
one sentence rule (protocol/sentences.py, tested in tests/test_sentences.py) says a sentence ends."""

from hypothesis import given, settings
from hypothesis import strategies as st

from soulstack.protocol.sentences import sentence_end
from soulstack.soul.converse.first_words import FirstWords, spoken_reply


def released(text, cuts):
    """Feed `text` cut at `cuts`; the pieces released by each delta, then by the block's end."""
    words, pieces, start = FirstWords(), [], 0
    for cut in sorted(set(cuts)) + [len(text)]:
        pieces.append(words.add(text[start:cut]))
        start = cut
    pieces.append(words.finish(text))
    return pieces


def test_sentences_come_out_as_soon_as_they_end():
    words = FirstWords()
    assert words.add("(waves) Hello, An") == ""
    assert words.add("a! I missed you (so") == "Hello, Ana!"
    assert words.add(" much). How was") == " I missed you."
    assert words.add(" the trip?") == " How was the trip?"
    assert words.finish() == ""


def test_chinese_sentences_end_without_a_space():
    words = FirstWords()
    assert words.add("\uff08\u7b11\uff09\u4f60\u56de\u6765\u5566\uff01\u4eca\u5929") == "\u4f60\u56de\u6765\u5566\uff01"
    assert words.finish() == "\u4eca\u5929"


def test_a_decimal_point_is_not_an_end_and_a_lone_bracket_is_said_at_the_end():
    words = FirstWords()
    assert words.add("It is 3.") == "" and words.add("5 now. And") == "It is 3.5 now."
    words = FirstWords()
    assert words.add("Oh. Look (that is sad. ") == "Oh."  # the "(" may still close: what follows it is held
    assert words.finish() == " Look (that is sad."


_alphabet = st.sampled_from(list('ab .!?,()\uff08\uff09\u3002\uff01\u4f60 3\u2026"\n'))


@settings(max_examples=300, deadline=None)
@given(st.text(_alphabet, max_size=40), st.lists(st.integers(0, 40), max_size=8))
def test_however_the_text_is_cut_the_pieces_join_to_the_spoken_reply(text, cuts):
    pieces = released(text, [c for c in cuts if c <= len(text)])
    assert "".join(pieces) == spoken_reply(text)
    for count, piece in enumerate(pieces[:-1], 1):  # before the block's end, only whole sentences go out
        so_far = "".join(pieces[:count])
        if piece:
            # Released only once what followed showed the sentence ended ("3." needs the space after it
            # to be more than a decimal point), so the prefix ends a sentence given a following space.
            assert sentence_end(so_far + " ") == len(so_far)
