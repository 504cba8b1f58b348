"""docs/events.md and the events' declarations (soulstack.flock.payloads) say the same, both ways:
every declared event and field is documented, and nothing is documented that is not declared.
The page's scripts, too, name only declared events and read only declared fields."""

import json
import re
from pathlib import Path

import pytest

from soulstack.flock import payloads

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "events.md").read_text()
IDENTIFIER = re.compile(r"`([a-z_]+)`")


def without_asides(text: str) -> str:
    """The text with every parenthesised aside taken out (values and notes: `(solo/split/murder)`)."""
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def section(title: str) -> str:
    return DOC.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def documented_list_events() -> dict:
    """{event: [its further fields]} from the table of "Messages on the stream"."""
    table = {}
    for name, further in re.findall(
        r"^\| `([a-z]+(?:\.[a-z]+)?)` \| (.*?) \|", section("Messages on the stream"), re.M
    ):
        table[name] = IDENTIFIER.findall(without_asides(further))
    return table


def documented_nest_record() -> list:
    sentence = DOC.split("Every message is stored and streamed as a record:", 1)[1].split(". ", 1)[0]
    return IDENTIFIER.findall(without_asides(sentence))


def test_every_list_event_and_field_is_documented_and_nothing_else():
    documented = documented_list_events()
    declared = {cls.NAME: cls for cls in payloads.LIST_EVENTS}
    assert list(documented) and sorted(documented) == sorted(declared)
    assert "Every object has `list_id` and `ts`" in section("Messages on the stream")
    for name, fields in documented.items():
        wire = payloads.field_names(declared[name])
        assert wire[:2] == ["list_id", "ts"], name
        assert fields == wire[2:], f"{name}: docs/events.md says {fields}, the declaration {wire[2:]}"
    for name, cls in declared.items():  # an optional field is documented as one
        for field in payloads.optional_fields(cls):
            assert f"`{field}` when" in section("Messages on the stream"), (name, field)


def test_the_nest_stream_event_and_its_record_are_documented_as_declared():
    assert f"streams `{payloads.NestMessage.NAME}` events" in DOC
    assert documented_nest_record() == payloads.field_names(payloads.NestMessage)


def test_the_skip_reasons_are_documented_as_declared():
    paragraph = DOC.split("Reasons in `item.skipped`:", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([a-z ]+)`", without_asides(paragraph)) == [reason.value for reason in payloads.Skip]


def test_the_verdicts_are_documented_as_declared():
    row = next(line for line in section("Messages on the stream").splitlines() if line.startswith("| `verdict` |"))
    assert re.search(r"`verdict` \(([^)]*)\)", row).group(1) == "/".join(f"`{v.value}`" for v in payloads.Verdict)


def test_a_declaration_has_every_field_required_but_its_optional_ones():
    with pytest.raises(TypeError):
        payloads.ItemSkipped(list_id="L", item_id="L-1")  # no reason: refused, never written without one
    landed = payloads.CrowLanded(list_id="L", item_id="L-1", crow="Hugin", ok=True, tokens=1)
    assert "error" not in landed.payload("t") and landed.payload("t")["ts"] == "t"


SCRIPTS = sorted((ROOT / "host" / "flock" / "web").glob("*.js"))
NESTED = {"item_id", "text"}  # list.started's items: [{item_id, text}]


def test_the_page_names_events_only_through_the_served_names_and_reads_only_declared_fields():
    declared = payloads.catalogue()["names"]  # what /api/ui serves as `names`, the page's E
    fields = {field for cls in payloads.BY_NAME.values() for field in payloads.field_names(cls)} | NESTED
    named, read, verdicts = set(), set(), set()
    for script in SCRIPTS:
        source = script.read_text()
        # No wire name as a string in the page's code (comments may say them). "verdict" is also a
        # stage's name (stages.js), so for it only where an event is matched.
        for name in payloads.BY_NAME:
            spelt = [f'"{name}"', f"'{name}'"] if "." in name else [f'case "{name}"', f'=== "{name}"']
            assert not any(form in source for form in spelt), (script.name, name)
        named |= set(re.findall(r"\bE\.([A-Za-z]+)", source))
        verdicts |= set(re.findall(r"\bV\.([A-Z]+)", source))
        for verdict in payloads.Verdict:  # matched through V, never spelt
            assert f'=== "{verdict.value}"' not in source and f'!== "{verdict.value}"' not in source, script.name
        read |= set(re.findall(r"\bd\.([a-z_]+)", source))  # `d`: an event's data, in every apply(name, d)
    assert named and named <= set(declared), named - set(declared)
    assert read and read <= fields, read - fields
    assert verdicts and verdicts <= set(payloads.catalogue()["verdicts"]), verdicts


def test_the_node_tests_know_the_event_names_the_page_is_served():
    recorded = json.loads((ROOT / "tests" / "web" / "event-names.json").read_text())
    served = payloads.catalogue()
    assert recorded == {"names": served["names"], "verdicts": served["verdicts"]}  # tests/web/record.py writes it


async def test_the_ui_serves_the_declarations(brainstem):
    status, ui = await brainstem.get("/api/ui")
    served = payloads.catalogue()
    assert status == 200 and ui["events"] == [cls.NAME for cls in payloads.LIST_EVENTS]
    assert ui["nest_event"] == payloads.NestMessage.NAME
    for key in ("names", "verdicts", "fields", "skip_reasons"):
        assert ui[key] == served[key], key
    assert ui["skip_reasons"]["no_model"] == "no model configured"  # the code a program matches, the words
