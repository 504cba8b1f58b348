"""The flock's HTTP surface over real loopback HTTP: lists, verdicts, nests, crows, SSE."""

import asyncio
import json
import re

import pytest

from soulstack.flock.lists.flow import FlockConfig
from tests.flock.helpers import Flock

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


async def test_brainstem_accepts_lists_and_skips_every_item_honestly(brainstem):
    list_id = await brainstem.new_list("- [ ] water the plants\n\n2. call the bank\n* [x] fix the tap")
    async with brainstem.events(list_id) as stream:
        started = await stream.until("list.started")
        finished = await stream.until("list.finished")
    assert started["items"] == [
        {"item_id": f"{list_id}-1", "text": "water the plants"},
        {"item_id": f"{list_id}-2", "text": "call the bank"},
        {"item_id": f"{list_id}-3", "text": "fix the tap"},
    ]
    assert started["requester"] == "ada" and started["nest_id"] == "todo"
    skipped = [m["data"] for m in stream.events if m["event"] == "item.skipped"]
    assert [s["reason"] for s in skipped] == ["no model configured"] * 3
    assert finished["tokens_used"] == 0 and finished["token_budget"] == FlockConfig().token_budget
    for message in stream.events:
        assert message["data"]["list_id"] == list_id
        assert RFC3339.match(message["data"]["ts"]), message
    ids = [m["id"] for m in stream.events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    "body, words",
    [
        ({"text": "", "requester": "ada"}, "no items"),
        ({"text": "-\n  \n1.", "requester": "ada"}, "no items"),
        ({"text": "x" * 2001, "requester": "ada"}, "at most 2000"),
        ({"text": "\n".join(f"task {n}" for n in range(51)), "requester": "ada"}, "at most 50"),
        ({"text": 5, "requester": "ada"}, '"text"'),
        ({"requester": "ada"}, '"text"'),
        ({"text": "a"}, '"requester"'),
        ({"text": "a", "requester": "   "}, '"requester"'),
        ({"text": "a", "requester": "ada", "nest_id": 3}, '"nest_id"'),
        ([1, 2], "JSON object"),
    ],
)
async def test_bad_list_bodies_are_400_with_a_message(brainstem, body, words):
    status, answer = await brainstem.post("/api/lists", body)
    assert status == 400 and words in answer["message"]


async def test_a_list_of_exactly_fifty_items_of_2000_characters_is_accepted(brainstem):
    text = "\n".join(f"{n:04d}" + "y" * 1996 for n in range(50))
    list_id = await brainstem.new_list(text)
    async with brainstem.events(list_id) as stream:
        started = await stream.until("list.started")
    assert len(started["items"]) == 50 and started["items"][-1]["item_id"] == f"{list_id}-50"


async def test_not_json_is_400_and_unknown_nest_is_404(brainstem):
    status, answer = await brainstem.post("/api/lists", data=b"{not json")
    assert status == 400 and answer["message"]
    status, answer = await brainstem.post("/api/lists", data=b"\xff\xfe")
    assert status == 400
    status, answer = await brainstem.post(
        "/api/lists", data=b'{"text": "a", "requester": "ada"}', content_type="text/plain"
    )
    assert status == 415 and "application/json" in answer["message"]
    status, answer = await brainstem.post("/api/lists", {"text": "a", "requester": "ada", "nest_id": "attic"})
    assert status == 404 and "attic" in answer["message"]


@pytest.mark.parametrize(
    "body, words",
    [
        ({"item_id": "abc-1", "target": "triage"}, "required"),
        ({"item_id": "abc-1", "target": "triage", "approve": None}, "true or false"),
        ({"item_id": "abc-1", "target": "triage", "approve": "yes"}, "true or false"),
        ({"item_id": "abc-1", "target": "both", "approve": True}, '"target"'),
        ({"target": "output", "approve": True}, '"item_id"'),
        ("approve", "JSON object"),
    ],
)
async def test_bad_verdict_bodies_are_400(brainstem, body, words):
    status, answer = await brainstem.post("/api/verdicts", body)
    assert status == 400 and words in answer["message"]


async def test_a_verdict_nobody_waits_for_is_404_in_plain_words(brainstem):
    for target, words in (("output", "an output verdict"), ("triage", "a triage verdict"), ("flag", "a flag verdict")):
        status, answer = await brainstem.post(
            "/api/verdicts", {"item_id": "nope-1", "target": target, "approve": False}
        )
        assert status == 404 and answer["message"] == f"nothing is waiting for {words} on 'nope-1'", answer


async def test_crows_are_ten_with_their_characters(brainstem):
    status, crows = await brainstem.get("/api/crows")
    assert status == 200 and len(crows) == 10
    names = [crow["name"] for crow in crows]
    assert {"Hugin", "Pepper", "Inky", "Sentry", "Elder"} <= set(names) and len(set(names)) == 10
    for crow in crows:
        assert set(crow) == {"name", "epithet", "strength", "backstory"} and all(crow.values())


async def test_nests_default_create_clash_and_persist(brainstem, tmp_path):
    status, nests = await brainstem.get("/api/nests")
    assert status == 200 and len(nests["roster"]) == 8 and "Sentry" not in nests["roster"]
    assert nests["nests"] == [{"nest_id": "todo", "name": "Todo", "crows": []}]
    status, nest = await brainstem.post("/api/nests", {"name": "  Launch copy! ", "crows": ["Pepper", "Inky"]})
    assert status == 201 and nest == {"nest_id": "launch-copy", "name": "Launch copy!", "crows": ["Pepper", "Inky"]}
    status, answer = await brainstem.post("/api/nests", {"name": "launch COPY", "crows": ["Hugin"]})
    assert status == 409 and "launch-copy" in answer["message"]
    status, answer = await brainstem.post("/api/nests", {"name": "Todo", "crows": ["Hugin"]})
    assert status == 409
    status, chinese = await brainstem.post("/api/nests", {"name": "发布文案", "crows": ["Soot"]})
    assert status == 201 and chinese == {"nest_id": "nest-1", "name": "发布文案", "crows": ["Soot"]}
    status, record = await brainstem.post("/api/nests/nest-1/messages", {"author": "owner", "text": "你好"})
    assert status == 201 and record["msg_id"] == "nest-1-1"
    on_disk = json.loads((tmp_path / "nests.json").read_text())
    assert [n["nest_id"] for n in on_disk["nests"]] == ["todo", "launch-copy", "nest-1"]
    list_id = await brainstem.new_list("write the launch post", nest_id="launch-copy")
    async with brainstem.events(list_id) as stream:
        assert (await stream.until("list.started"))["nest_id"] == "launch-copy"


@pytest.mark.parametrize(
    "body",
    [
        {"name": "", "crows": ["Hugin"]},
        {"name": "   ", "crows": ["Hugin"]},
        {"name": "x" * 41, "crows": ["Hugin"]},
        {"name": "!!!", "crows": ["Hugin"]},
        {"name": "ok", "crows": []},
        {"name": "ok", "crows": ["Hugin", "Hugin"]},
        {"name": "ok", "crows": ["Sentry"]},
        {"name": "ok", "crows": ["Elder"]},
        {"name": "ok", "crows": ["Nobody"]},
        {"name": "ok", "crows": "Hugin"},
        {"name": "ok", "crows": ["Hugin", "Munin", "Pepper", "Inky", "Tinker", "Ledger", "Soot", "Marlow", "Hugin"]},
        {"name": 7, "crows": ["Hugin"]},
        {"crows": ["Hugin"]},
    ],
)
async def test_bad_nests_are_400(brainstem, body):
    status, answer = await brainstem.post("/api/nests", body)
    assert status == 400 and answer["message"]


async def test_at_most_twenty_nests(brainstem):
    name_of_40 = "n" * 38
    for n in range(19):  # `todo` is the twentieth
        status, _ = await brainstem.post("/api/nests", {"name": f"{name_of_40}{n:02d}", "crows": ["Hugin"]})
        assert status == 201
    status, answer = await brainstem.post("/api/nests", {"name": "one too many", "crows": ["Hugin"]})
    assert status == 400 and "20" in answer["message"]
    status, nests = await brainstem.get("/api/nests")
    assert len(nests["nests"]) == 20


async def test_sse_heartbeat_ids_and_reconnect_replay(brainstem):
    async with brainstem.events() as everything:  # no list_id: every list, live
        first = await brainstem.new_list("one")
        second = await brainstem.new_list("two")
        await everything.until("list.finished", list_id=second)
        assert {m["data"]["list_id"] for m in everything.events} == {first, second}
        ids = [m["id"] for m in everything.events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    async with brainstem.events(first) as stream:
        await stream.until("list.finished")
        await asyncio.sleep(0.2)
        await brainstem.new_list("three")
        # a heartbeat comment arrives while nothing happens on this list
        with pytest.raises(TimeoutError):
            await stream.next(timeout=0.3)
        assert stream.comments, "expected a heartbeat comment line"
    middle = everything.events[1]["id"]
    async with brainstem.events(first, last_event_id=middle) as replay:
        await replay.until("list.finished")
    expected = [m["id"] for m in everything.events if m["data"]["list_id"] == first and m["id"] > middle]
    assert [m["id"] for m in replay.events] == expected
    async with brainstem.events(last_event_id=middle) as all_replay:
        await all_replay.until("list.finished", list_id=second)
    assert all_replay.events[0]["id"] == everything.events[2]["id"]


async def test_sse_refuses_unknown_list_and_bad_last_event_id(brainstem):
    async with brainstem.session.get("/api/events", params={"list_id": "nope"}) as response:
        assert response.status == 404 and (await response.json())["message"]
    async with brainstem.session.get("/api/events", headers={"Last-Event-ID": "yesterday"}) as response:
        assert response.status == 400 and (await response.json())["message"]


async def test_web_page_is_served(brainstem):
    async with brainstem.session.get("/") as response:
        page = await response.text()
    assert response.status == 200 and "/web/page.js" in page
    async with brainstem.session.get("/web/stream.js") as response:  # the page's stream module
        assert response.status == 200 and "/api/events" in await response.text()


async def test_nests_and_the_event_log_survive_a_restart(tmp_path):
    config = FlockConfig(heartbeat_s=0.05)
    first = await Flock(tmp_path, config=config).start()
    try:
        assert (await first.post("/api/nests", {"name": "Night shift", "crows": ["Soot"]}))[0] == 201
        list_id = await first.new_list("one")
        async with first.events(list_id) as stream:
            await stream.until("list.finished")
    finally:
        await first.stop()
    second = await Flock(tmp_path, config=config).start()
    try:
        _, nests = await second.get("/api/nests")
        assert [n["nest_id"] for n in nests["nests"]] == ["todo", "night-shift"]
        assert (await second.post("/api/nests", {"name": "night SHIFT", "crows": ["Soot"]}))[0] == 409
        async with second.events(list_id) as replay:
            await replay.until("list.finished")
        assert [m["id"] for m in replay.events] == [m["id"] for m in stream.events]
        later = await second.new_list("two")
        async with second.events(later) as fresh:
            assert (await fresh.next())["id"] > stream.events[-1]["id"]
    finally:
        await second.stop()
