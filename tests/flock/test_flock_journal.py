"""The flock's log lines for people (soulstack.flock.journal)."""

from soulstack.flock.journal import describe


def test_each_meaningful_event_is_one_readable_line():
    assert (
        describe(
            "crow.landed", {"item_id": "L1-2", "crow": "Hugin", "ok": False, "tokens": 0, "error": "anthropic 529"}
        )
        == "L1-2: Hugin came back without a result: anthropic 529"
    )
    assert (
        describe("crow.flying", {"item_id": "L1-2", "crow": "Munin", "borrowed": True})
        == "L1-2: Munin is flying (borrowed)"
    )
    assert describe("item.skipped", {"item_id": "L1-3", "reason": "budget"}) == "L1-3: skipped (budget)"
    assert describe("verdict", {"item_id": "L1-3", "target": "output", "verdict": "timeout"}) == "L1-3: output timeout"
    assert (
        describe("list.finished", {"list_id": "L1", "tokens_used": 900, "token_budget": 20000})
        == "list L1 finished: 900 of 20000 tokens used"
    )
    assert (
        describe("item.answered", {"item_id": "L1-1", "crows": ["Hugin", "Munin"], "needs_approval": False})
        == "L1-1: answered by Hugin, Munin"
    )


def test_events_without_a_line_make_none():
    assert describe("nest.message", {"nest_id": "n"}) is None  # a kind it does not know
    assert describe("list.started", {"list_id": "L1"}) is None  # a field missing: no line, and no crash
