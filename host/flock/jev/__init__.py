"""Jev, the flock's calibrated choice-tagger: "which kind is this nest message?" (docs/events.md).

local.py     the default backend: a text expert and a context expert trained from data/train.nests
             and data/train_second.nests (hand-written nest conversations by two writers, English
             and Chinese), less their held-out conversations
combine.py   the experts' weighted product and its temperature (falls with unfamiliar text and
             with disagreement), calibrated on data/calibration.nests (a writer blind to the others)
context.py   what Jev may know beside the words: author, addressee, refers_to's kind, the
             nest's recent kinds, the open request (the harness and the data share it)
dataset.py   reads the written conversations (data/*.nests; data/README.md says who wrote them)
evaluate.py  the figures (accuracy where sure, coverage, overall, ECE, sure-and-wrong plain
             messages) and the band, chosen on the calibration set and data/same_writer.nests;
             data/outside.nests measures
question.py  the question both LLM backends ask (six letters, the nest's last messages)
judge.py     the LLM judge through the flock's own model (agreement over samples), with the
             local Jev as its fallback
llm.py       the logprobs backend: any OpenAI-compatible server that returns logprobs
judge_fit.py each LLM backend's one number (the judge's prior, the logprobs temperature) and
             band, fitted on the training conversations; `jev-report --judge`
learn.py     the owner's corrections re-fit the local Jev in the background, kept only if no worse
tagging.py   the rule from Jev's probabilities and a crow's header to a kind, and jev.jsonl
report.py    `soulstack flock jev-report`: calibration in distribution, on both sets, on the log,
             and the corrections
tools/bench-jev measures it.
"""
