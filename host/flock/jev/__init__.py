"""Jev, the flock's calibrated choice-tagger: "which kind is this nest message?" (docs/events.md).

local.py     the default backend: a classifier trained from examples.jsonl (labelled nest
             messages, English and Chinese), its held-out split and calibration figures
llm.py       the optional backend: any OpenAI-compatible server that returns logprobs
tagging.py   the rule from Jev's probabilities and a crow's header to a kind, and jev.jsonl
report.py    `soulstack flock jev-report`: calibration on the log and the held-out examples
tools/bench-jev measures it.
"""
