"""Jev's data: written nest conversations (data/*.nests), read into labelled messages with context.

A `.nests` file holds conversations as people read them (data/README.md says who wrote them and
how). A conversation starts with a line

    == <id> | <lang> | <who wrote it, and in what voice> | <the situation>

and each following line is one message, numbered from 1 within its conversation:

    <author>[><to>][^<n>] <kind>[!][/<header>] | <text>

`author` and `to` are "owner" or a crow's name; `^n` is its `refers_to` (message n of the
conversation); `kind` is the true kind; `/header` is the kind header the crow itself sent, when
it sent one (the tagging rule falls back to it when Jev is unsure); a `!` right after the kind
marks a message whose words alone state its kind (`plain`: Jev must never be sure and wrong on
one, whatever the nest around it says). Lines starting with `#` are
comments. Each message becomes a dict with the text, its kind and header, `conv`, `lang`, `by`,
`plain`, and its context (soulstack.flock.jev.context.nest_context, the harness's own function).
"""

import re
from pathlib import Path

from soulstack.flock.jev.context import nest_context

DATA = Path(__file__).with_name("data")
TRAIN = DATA / "train.nests"
# Every file Jev trains on: the first writer's, then writers blind to every other file (data/README.md).
TRAINING = (TRAIN, DATA / "train_second.nests")
SAME_WRITER = DATA / "same_writer.nests"  # train.nests' writer again, by other rules; chooses the band
CALIBRATION = DATA / "calibration.nests"  # another writer, blind to the others; calibrates, never trains
SEPARATE = DATA / "outside.nests"  # written by someone who never saw train.nests; only measures
LINE = re.compile(
    r"^(?P<author>\w+)(?:>(?P<to>\w+))?(?:\^(?P<ref>\d+))? "
    r"(?P<kind>\w+)(?P<plain>!)?(?:/(?P<header>\w+))? \| (?P<text>.+)$"
)
KINDS = ("say", "request", "claim", "deliver", "refer", "decline")


class DataError(ValueError):
    pass


def read_nests(path: Path) -> list:
    """-> every message of the file, in order, each with its context. DataError names a bad line."""
    messages: list = []
    conv = None
    earlier: list = []
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{Path(path).name}:{number}"
        if line.startswith("=="):
            fields = [field.strip() for field in line[2:].split("|")]
            if len(fields) != 4 or fields[1] not in ("en", "zh"):
                raise DataError(f"{where}: a conversation line is '== id | en|zh | writer | situation'")
            conv, earlier = {"conv": fields[0], "lang": fields[1], "by": fields[2]}, []
            continue
        match = LINE.match(line)
        if conv is None or match is None:
            raise DataError(f"{where}: not a message line: {line[:60]!r}")
        kind, header = match["kind"], match["header"] or ""
        if kind not in KINDS or (header and header not in KINDS):
            raise DataError(f"{where}: unknown kind {kind!r} or header {header!r}")
        if match["author"] == "owner" and kind not in ("say", "request", "refer"):
            raise DataError(f"{where}: the owner posts say, request or refer, never {kind}")
        ref = int(match["ref"]) if match["ref"] else 0
        if ref > len(earlier):
            raise DataError(f"{where}: ^{ref} refers to a message not written yet")
        referred = earlier[ref - 1] if ref else None
        record = {"author": match["author"], "to": match["to"] or "", "kind": kind}
        context = nest_context(earlier, record["author"], record["to"], referred)
        messages.append(
            {
                **conv,
                "n": len(earlier) + 1,
                "author": record["author"],
                "text": match["text"],
                "kind": kind,
                "header": header,
                "plain": bool(match["plain"]),
                **context,
            }
        )
        earlier.append(record)
    return messages


def context_of(example: dict) -> dict:
    """The context fields of a message dict, as Jev's backends take them."""
    return {key: example[key] for key in ("author_role", "to_role", "refers_kind", "recent_kinds", "open_request")}
