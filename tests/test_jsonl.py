"""JSON Lines read back after a kill -9 (host/jsonl.py): the soul's session and nudge inbox, the
flock's Jev log and the simulator's journal all read through it."""

import json
import logging

from soulstack.jsonl import cut_torn_tail, read_records
from soulstack.protocol.nudges import Nudge
from soulstack.soul.nudges.inbox import Inbox


def lines(*records) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def test_a_torn_last_line_is_skipped_and_cut_so_the_next_append_starts_clean(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(lines({"n": 1}, {"n": 2}) + b'{"n": ')
    taken = []
    reading = read_records(path, taken.append)
    assert taken == [{"n": 1}, {"n": 2}]
    assert [(s.number, s.last) for s in reading.skipped] == [(3, True)]
    cut_torn_tail(path, reading)
    assert path.read_bytes() == lines({"n": 1}, {"n": 2})


def test_a_bad_line_in_the_middle_stays_and_a_missing_last_newline_is_added(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\nnot json\n\n{"n": 2}')
    taken = []
    reading = read_records(path, taken.append)
    assert taken == [{"n": 1}, {"n": 2}]  # the blank line is passed over, not reported
    assert [(s.number, s.last) for s in reading.skipped] == [(2, False)]
    cut_torn_tail(path, reading)
    assert path.read_bytes() == b'{"n": 1}\nnot json\n\n{"n": 2}\n'


def test_what_take_refuses_is_skipped_like_a_torn_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(lines({"m": 0}, {"n": 1}))
    taken = []
    reading = read_records(path, lambda record: taken.append(record["n"]))
    assert taken == [1] and isinstance(reading.skipped[0].error, KeyError) and reading.clean


def test_a_line_separator_inside_a_record_leaves_it_whole(tmp_path, caplog):
    """json.dumps(ensure_ascii=False) writes U+2028 and U+0085 as they are; they end no line."""
    path = tmp_path / "NUDGES.jsonl"
    path.write_text(json.dumps({"reason": "one\u2028two\x85three"}, ensure_ascii=False) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        inbox = Inbox(path, 60).load()
    assert [entry.nudge.reason for entry in inbox.entries] == ["one\u2028two\x85three"] and not caplog.records
    assert isinstance(inbox.entries[0].nudge, Nudge)


def test_jev_log_cuts_a_torn_tail_before_its_next_decision(tmp_path):
    from soulstack.flock.jev.tagging import JevLog

    path = tmp_path / "jev.jsonl"
    path.write_bytes(b'{"kind": "say"}\n{"kind": "requ')  # a power cut in the middle of an append
    log = JevLog(path)
    log.append({"kind": "claim"})
    assert log.read() == [{"kind": "say"}, {"kind": "claim"}]  # the new decision is not glued onto the torn one
    assert path.read_bytes() == b'{"kind": "say"}\n{"kind": "claim"}\n'
    JevLog(path)  # a clean file is left exactly as it is
    assert path.read_bytes() == b'{"kind": "say"}\n{"kind": "claim"}\n'
