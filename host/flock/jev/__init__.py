"""Jev, the flock's calibrated choice-tagger: "which kind is this nest message?" (docs/events.md).

local.py     the default backend: a classifier trained from data/train.nests (hand-written nest
             conversations, English and Chinese), its held-out conversations and calibration
context.py   what Jev may know beside the words: author, addressee, refers_to's kind, the
             nest's recent kinds, the open request (the harness and the data share it)
dataset.py   reads the written conversations (data/*.nests; data/README.md says who wrote them)
evaluate.py  the separate set's figures (accuracy where sure, coverage, overall, ECE) and the band
llm.py       the optional backend: any OpenAI-compatible server that returns logprobs
tagging.py   the rule from Jev's probabilities and a crow's header to a kind, and jev.jsonl
report.py    `soulstack flock jev-report`: calibration in distribution, on the separate set, on the log
tools/bench-jev measures it.
"""
