"""protocol/sentences.py: the one sentence rule, and /speak's limit, for everything that speaks a text
a sentence at a time (the soul's first words, ears; each user shows it uses it in its own tests)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from soulstack.firmware.core.protocol import MAX_SPEAK_CHARS
from soulstack.protocol.sentences import sentence_end, split_sentences


def test_sentences_end_at_latin_stops_before_a_space_and_at_cjk_stops_at_once():
    assert split_sentences("Hi. How are", final=False) == (["Hi."], " How are")
    assert split_sentences("Wait... what?! yes", final=True) == (["Wait...", "what?!", "yes"], "")
    assert split_sentences("你好。今天", final=False) == (["你好。"], "今天")
    assert split_sentences("一行\n下一行", final=False) == (["一行"], "下一行")  # a line break ends one too


def test_marks_alone_are_no_sentence_and_open_the_next():
    # a voice makes no sound for "...": sent alone to a /speak, tts would answer 400
    assert split_sentences("Well. ... Okay.", final=True) == (["Well.", "... Okay."], "")
    assert split_sentences("Well. ... ", final=False) == (["Well."], " ... ")  # it waits for its sentence
    assert split_sentences("……。好的。", final=True) == (["……。好的。"], "")


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert split_sentences('He said "go." Then', final=False) == (['He said "go."'], " Then")
    assert split_sentences("She said \u2018go.\u2019 Then", final=False)[0] == ["She said \u2018go.\u2019"]
    assert split_sentences("他说\u300e好。\u300f然后", final=False) == (["他说\u300e好。\u300f"], "然后")
    assert split_sentences("他说\u201c好！\u201d然后", final=False) == (["他说\u201c好！\u201d"], "然后")


def test_a_decimal_point_ends_nothing_even_at_the_end_of_the_text_so_far():
    assert split_sentences("It costs 3.5 euros", final=False) == ([], "It costs 3.5 euros")
    assert split_sentences("It costs 3.", final=False) == ([], "It costs 3.")  # it may become 3.5
    assert sentence_end("It is 3.") == 0 and sentence_end("It is 3. Then") == len("It is 3.")
    assert sentence_end("Hi. Ok.") == len("Hi. Ok.")  # the last complete one


def test_the_limit_is_what_a_speak_takes_and_longer_runs_are_cut_at_a_space():
    assert MAX_SPEAK_CHARS == 2000  # the firmware's own /speak limit, not a number of our own
    long = " ".join(["word"] * 300) + "."  # 1,500 characters in one sentence: one piece
    assert split_sentences(long, final=True) == ([long], "")
    longer = " ".join(["word"] * 500)  # 2,499 characters and no end yet: cut before the limit, at a space
    ready, rest = split_sentences(longer, final=False)
    assert len(ready) == 1 and len(ready[0]) <= MAX_SPEAK_CHARS and ready[0].endswith("word")
    assert (ready[0] + rest).replace(" ", "") == longer.replace(" ", "")
    assert split_sentences("字" * 2500, final=True)[0] == ["字" * 2000, "字" * 500]  # no spaces: at the limit


_alphabet = st.sampled_from(list('ab .!?\u3002\uff01\u4f60 3"\u201d\n'))


@settings(max_examples=300, deadline=None)
@given(st.text(_alphabet, max_size=60), st.integers(3, 12))
def test_nothing_is_lost_and_no_piece_is_over_the_limit(text, limit):
    ready, rest = split_sentences(text, final=False, limit=limit)
    done, left = split_sentences(rest, final=True, limit=limit)
    pieces = ready + done
    assert left == "" and all(0 < len(piece) <= limit and piece == piece.strip() for piece in pieces)
    assert "".join("".join(piece.split()) for piece in pieces) == "".join(text.split())
