"""The flock's log lines for people (soulstack.flock.journal), from the declared events."""

from soulstack.flock import payloads as p
from soulstack.flock.journal import describe


def test_each_meaningful_event_is_one_readable_line():
    landed = p.CrowLanded(list_id="L1", item_id="L1-2", crow="Hugin", ok=False, tokens=0, error="anthropic 529")
    assert describe(landed) == "L1-2: Hugin came back without a result: anthropic 529"
    back = p.CrowLanded(list_id="L1", item_id="L1-2", crow="Hugin", ok=True, tokens=42)
    assert describe(back) == "L1-2: Hugin is back (42 tokens)"
    flying = p.CrowFlying(list_id="L1", item_id="L1-2", crow="Munin", borrowed=True)
    assert describe(flying) == "L1-2: Munin is flying (borrowed)"
    skipped = p.ItemSkipped(list_id="L1", item_id="L1-3", reason=p.Skip.BUDGET)
    assert describe(skipped) == "L1-3: skipped (budget)"
    verdict = p.VerdictGiven(list_id="L1", item_id="L1-3", target="output", verdict=p.Verdict.TIMEOUT)
    assert describe(verdict) == "L1-3: output timeout"
    finished = p.ListFinished(list_id="L1", tokens_used=900, token_budget=20000)
    assert describe(finished) == "list L1 finished: 900 of 20000 tokens used"
    answered = p.ItemAnswered(
        list_id="L1", item_id="L1-1", answer="done", crows=["Hugin", "Munin"], needs_approval=False
    )
    assert describe(answered) == "L1-1: answered by Hugin, Munin"
    waiting = p.ItemTriaged(
        list_id="L1",
        item_id="L1-1",
        mode="split",
        task_type="code",
        subtasks=["a", "b"],
        reason="two parts",
        needs_approval=True,
    )
    assert describe(waiting) == "L1-1: the Sentry says split (code, 2 parts): two parts; waits for your approval"


def test_a_nest_message_is_a_line_without_the_words_of_the_owner_or_a_crow():
    def message(msg_id, kind, author, text, to="", refers_to="", tagged_by="default"):
        return p.NestMessage(
            nest_id="launch",
            ts="2026-12-03T07:00:00.000Z",
            msg_id=msg_id,
            kind=kind,
            author=author,
            text=text,
            to=to,
            refers_to=refers_to,
            tagged_by=tagged_by,
        )

    claim = message("launch-2", "claim", "Pepper", "Mine, the taglines.", "owner", "launch-1", "jev")
    assert describe(claim) == "launch-2: Pepper claim to owner about launch-1 (tagged by jev)"
    said = message("launch-3", "say", "owner", "my bank PIN is 1234")
    assert describe(said) == "launch-3: owner say (tagged by default)"
    why = "Pepper delivered without claiming any request. Pepper is quarantined until the owner decides."
    flag = message("launch-4", "flag", "Sentry", why, "Pepper", "launch-3")
    assert describe(flag) == f"launch-4: Sentry flag to Pepper about launch-3: {why}"


def test_events_without_a_line_make_none():
    banter = p.CrowBanter(list_id="L1", item_id="L1-1", crow="Hugin", to="Munin", text="caw")
    assert describe(banter) is None  # an aside, nothing for the log
    changed = p.TrustChanged(list_id="L1", item_id="L1-1", holder="flock", task_type="code", from_=0, to=1)
    assert describe(changed) is None
