"""An existing flock's data, written before lists, items and events were typed, loads and carries on
byte for byte (soulstack.flock.rows, soulstack.flock.payloads).

tests/flock/data/typed-rows-before.sql is the flock.db the flock wrote (commit 52106e9, the last before
events and rows were typed: its own code and tests/flock/helpers.py run from `git archive`, with the Brain
and a ManualClock) after two lists: one whose three triages were
approved (the flock's trust in research moved), one with an item done, one skipped as a failure, one
triage rejected and one still waiting for its triage verdict. typed-rows-before.json is what that same
code then did and answered after a restart: the waiting item approved twice, its list finished, and
the events, rows and read API it left.
"""

import dataclasses
import json
import sqlite3
from pathlib import Path

from soulstack.flock import payloads
from soulstack.flock.lists.flow import FlockConfig
from soulstack.flock.rows import ItemState, Triage
from soulstack.flock.store import Store
from tests.flock.helpers import Brain, Flock, start_fake_model

DATA = Path(__file__).parent / "data"
BEFORE = json.loads((DATA / "typed-rows-before.json").read_text())


def old_flock_db(tmp_path: Path) -> Path:
    data = tmp_path / "crows"
    data.mkdir(mode=0o700)
    db = sqlite3.connect(data / "flock.db")
    db.executescript((DATA / "typed-rows-before.sql").read_text())
    db.close()
    return data


def test_every_stored_event_of_an_older_flock_is_its_declaration_written_back_byte_for_byte(tmp_path):
    store = Store(old_flock_db(tmp_path))
    rows = store.events_after(0)
    assert {name for _, name, _ in rows} >= {"list.started", "item.triaged", "trust.changed", "item.skipped"}
    for _id, name, data in rows:
        fields = json.loads(data)
        event = payloads.loose(name, fields)
        # Built again through the constructor, so a field the declaration lacks (or has extra) fails here.
        given = {
            f.name: getattr(event, f.name) for f in dataclasses.fields(event) if getattr(event, f.name) is not None
        }
        again = type(event)(**given)
        assert json.dumps(again.payload(fields["ts"]), ensure_ascii=False) == data, name
    store.close()


def test_an_older_flocks_rows_read_as_typed_rows_and_write_back_the_same_text(tmp_path):
    store = Store(old_flock_db(tmp_path))
    before = store.db.execute("SELECT item_id, triage, crows FROM items ORDER BY rowid").fetchall()
    for lst in store.all_lists():
        assert lst.finished in (True, False) and lst.token_budget == 100_000
        for item in store.items(lst.list_id):
            assert isinstance(item.state, ItemState) and item.list_id == lst.list_id
            assert isinstance(item.triage, Triage) and item.triage.needs_approval is True
            store.set_item(item.item_id, item.state, triage=item.triage, crows=item.crows or None)
    assert store.db.execute("SELECT item_id, triage, crows FROM items ORDER BY rowid").fetchall() == before
    store.close()


async def test_an_older_flock_restarts_on_typed_rows_and_does_what_it_did_byte_for_byte(tmp_path):
    data = old_flock_db(tmp_path)
    research, code = BEFORE["lists"]
    fake, model = await start_fake_model(Brain())
    config = FlockConfig(heartbeat_s=0.2, lists_per_minute=1000, model_backoff_s=0.01)
    flock = await Flock(data, model, config).start()
    try:
        assert (await flock.get("/api/waiting"))[1] == BEFORE["waiting"]
        assert flock.flock.store.last_event_id() == BEFORE["last_event_id_before"]
        async with flock.events(code) as stream:
            assert await flock.verdict(f"{code}-4", "triage") == 204
            await stream.seen_or_next("item.answered", item_id=f"{code}-4", timeout=10)
            assert await flock.verdict(f"{code}-4", "output") == 204
            await stream.seen_or_next("list.finished", timeout=10)
        events = flock.flock.store.events_after(BEFORE["last_event_id_before"])
        assert [list(row) for row in events] == BEFORE["events_after"]  # the same events, the same bytes
        assert {lst: (await flock.get(f"/api/lists/{lst}"))[1] for lst in (research, code)} == BEFORE["views"]
        assert (await flock.get("/api/lists"))[1] == BEFORE["all_lists"]
        assert (await flock.get("/api/trust"))[1] == BEFORE["trust"]
        rows = flock.flock.store.db.execute("SELECT item_id, state, triage, answer, crows FROM items ORDER BY rowid")
        assert [list(row) for row in rows.fetchall()] == BEFORE["items_after"]
    finally:
        await flock.stop()
        await fake.stop()
