"""What the firmware's core says about every emotion word and every request in a corpus.

`micropython agreement.py CORPUS.json` (or CPython): the corpus is
{"words": [...], "requests": [[endpoint, body-as-JSON-text], ...]}; prints one
JSON object: the endpoints, each word's face on the robot and on a reference-face
body, and each request's verdict (["ok", clean] or ["bad", message]).
tests/bodies/test_protocol_one_source.py compares it with what the host computes.
"""

import json
import sys

from core import emotions, protocol


def verdict(endpoint, raw):
    try:
        return ["ok", protocol.validate(endpoint, json.loads(raw))]
    except protocol.BadRequest as problem:
        return ["bad", str(problem)]


def main(path):
    with open(path) as handle:
        corpus = json.load(handle)
    reference = emotions.table(emotions.REFERENCE)
    out = {
        "endpoints": list(protocol.ENDPOINTS),
        "robot": [emotions.nearest_face(word) for word in corpus["words"]],
        "reference": [emotions.match(reference, word) for word in corpus["words"]],
        "requests": [verdict(endpoint, raw) for endpoint, raw in corpus["requests"]],
    }
    print(json.dumps(out))


main(sys.argv[1])
