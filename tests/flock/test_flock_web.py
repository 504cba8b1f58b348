"""What the web page relies on, over real loopback HTTP: `?after=` (Last-Event-ID in the URL) and
`?recent=N` (the opening view), from which the page rebuilds its cards and the approvals still
waiting. The page itself, in a real browser, is tests/flock/test_flock_page_browser.py."""

import pytest

from soulstack.flock.lists.flow import FlockConfig
from tests.flock.helpers import SSE, Flock, start_fake_model


class Stream(SSE):
    """The support SSE reader, opened with any query and headers."""

    def __init__(self, session, params=None, headers=None):
        super().__init__(session)
        self.params, self.headers = params or {}, headers or {}

    async def __aenter__(self):
        self.response = await self.session.get("/api/events", params=self.params, headers=self.headers)
        assert self.response.status == 200, await self.response.text()
        return self

    async def take(self, count):
        """Read exactly `count` messages, then make sure no further one is already on its way."""
        for _ in range(count):
            await self.next()
        with pytest.raises(TimeoutError):
            await self.next(timeout=0.3)
        return list(self.events)


def pending_from(events):
    """The page's rule: a target waits from a needs_approval triage/answer until its verdict or the skip."""
    waiting = set()
    for message in events:
        name, d = message["event"], message["data"]
        if name in ("item.triaged", "item.answered") and d["needs_approval"]:
            waiting.add((d["item_id"], "triage" if name == "item.triaged" else "output"))
        elif name == "verdict":
            waiting.discard((d["item_id"], d["target"]))
        elif name == "item.skipped":
            waiting -= {(d["item_id"], "triage"), (d["item_id"], "output")}
    return waiting


@pytest.fixture
async def fake_model():
    fake, model = await start_fake_model()
    yield model
    await fake.stop()


def with_model(tmp_path, model):
    return Flock(tmp_path, model=model, config=FlockConfig(heartbeat_s=1.0, lists_per_minute=1000))


async def finished_lists(flock, count):
    ids = []
    for n in range(count):
        list_id = await flock.new_list(f"chore {n}")
        async with flock.events(list_id) as stream:
            await stream.until("list.finished")
        ids.append(list_id)
    return ids


# --- ?after= ------------------------------------------------------------------
async def test_after_replays_like_last_event_id_for_all_lists_and_one_list(brainstem):
    first, second = await finished_lists(brainstem, 2)
    async with Stream(brainstem.session, {"after": "0"}) as everything:
        every = await everything.take(6)  # two lists of one skipped item: 3 events each
    middle = every[1]["id"]
    async with Stream(brainstem.session, {"after": str(middle)}) as tail:
        assert await tail.take(4) == every[2:]
    async with Stream(brainstem.session, {"after": str(middle), "list_id": first}) as one:
        assert await one.take(1) == [every[2]] and every[2]["data"]["list_id"] == first
    async with Stream(brainstem.session, {"after": str(every[-1]["id"])}) as live:  # nothing missed: live
        third = await brainstem.new_list("chore 3")
        started = await live.next()
    assert started["event"] == "list.started" and started["data"]["list_id"] == third
    assert started["id"] > every[-1]["id"]


async def test_the_last_event_id_header_wins_over_after_and_recent(brainstem):
    await finished_lists(brainstem, 2)
    async with Stream(brainstem.session, {"after": "0"}) as everything:
        every = await everything.take(6)
    # EventSource reconnects to the same URL, adding the header: the header says where it was.
    header = {"Last-Event-ID": str(every[3]["id"])}
    async with Stream(brainstem.session, {"after": "0"}, header) as resumed:
        assert await resumed.take(2) == every[4:]
    async with Stream(brainstem.session, {"recent": "2"}, header) as resumed:
        assert await resumed.take(2) == every[4:]


@pytest.mark.parametrize("value", ["", "x", "-1", "1.5", "+3", " ", "٣", "99999999999999999999"])
async def test_a_bad_after_is_400_with_a_message(brainstem, value):
    await finished_lists(brainstem, 1)
    async with brainstem.session.get("/api/events", params={"after": value}) as response:
        assert response.status == 400
        assert "after" in (await response.json())["message"]


async def test_an_id_newer_than_any_event_is_refused_in_the_query_and_the_header(brainstem):
    await finished_lists(brainstem, 1)  # three events: ids 1-3
    async with brainstem.session.get("/api/events", params={"after": "4"}) as response:
        assert response.status == 400 and "0 to 3" in (await response.json())["message"]
    async with brainstem.session.get("/api/events", headers={"Last-Event-ID": "4"}) as response:
        assert response.status == 400 and "Last-Event-ID" in (await response.json())["message"]
    # A bad query value is refused even when a good header would win.
    async with brainstem.session.get("/api/events", params={"after": "x"}, headers={"Last-Event-ID": "1"}) as response:
        assert response.status == 400


# --- ?recent=N ----------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "101", "x", "", "-2", "2.0"])
async def test_a_bad_recent_is_400_with_a_message(brainstem, value):
    async with brainstem.session.get("/api/events", params={"recent": value}) as response:
        assert response.status == 400 and "recent" in (await response.json())["message"]


async def test_recent_is_only_for_the_all_lists_stream(brainstem):
    (list_id,) = await finished_lists(brainstem, 1)
    async with brainstem.session.get("/api/events", params={"recent": "5", "list_id": list_id}) as response:
        assert response.status == 400 and "all-lists" in (await response.json())["message"]


async def test_recent_replays_the_newest_lists_whole_then_follows_live(brainstem):
    lists = await finished_lists(brainstem, 3)
    async with Stream(brainstem.session, {"after": "0"}) as everything:
        every = await everything.take(9)
    async with Stream(brainstem.session, {"recent": "2"}) as view:
        replayed = await view.take(6)
        fourth = await brainstem.new_list("chore 4")
        await view.until("list.finished", list_id=fourth)
    assert replayed == [m for m in every if m["data"]["list_id"] in lists[1:]]
    live = view.events[6:]
    assert {m["data"]["list_id"] for m in live} == {fourth} and len(live) == 3
    # The brainstem's honest skip reaches a page opened after the fact.
    assert [m["data"]["reason"] for m in replayed if m["event"] == "item.skipped"] == ["no model configured"] * 2
    async with Stream(brainstem.session, {"recent": "100"}) as all_of_them:
        assert len(await all_of_them.take(12)) == 12


async def test_recent_always_holds_unfinished_lists_so_pending_approvals_can_be_derived(tmp_path, fake_model):
    flock = await with_model(tmp_path, fake_model).start()
    try:
        waiting = await flock.new_list("research the old question")  # started first, never answered
        async with flock.events(waiting) as stream:
            await stream.until("item.triaged")
        for n in range(2):  # two newer lists, finished by rejecting their triage
            done = await flock.new_list(f"research thing {n}")
            async with flock.events(done) as stream:
                assert (await stream.until("item.triaged"))["needs_approval"] is True
                assert await flock.verdict(f"{done}-1", "triage", approve=False) == 204
                await stream.until("list.finished")
        async with Stream(flock.session, {"after": "0"}) as everything:
            every = await everything.take(len(flock.flock.store.events_after(0)))
        async with Stream(flock.session, {"recent": "1"}) as view:
            replayed = await view.take(len([m for m in every if m["data"]["list_id"] in (waiting, done)]))
            assert replayed == [m for m in every if m["data"]["list_id"] in (waiting, done)]
            assert pending_from(replayed) == {(f"{waiting}-1", "triage")}
            assert {(i, t) for i, t, _ in flock.flock.store.all_pending()} == pending_from(replayed)
            # The derived approval is one the server really waits for; what follows arrives live.
            assert await flock.verdict(f"{waiting}-1", "triage") == 204
            answered = await view.until("item.answered", item_id=f"{waiting}-1")
        assert answered["needs_approval"] is True
        assert pending_from(view.events) == {(f"{waiting}-1", "output")}
    finally:
        await flock.stop()


async def test_after_a_restart_the_opening_view_still_shows_what_waits(tmp_path, fake_model):
    flock = await with_model(tmp_path, fake_model).start()
    list_id = await flock.new_list("research one\nresearch two")
    async with flock.events(list_id) as stream:
        await stream.until("item.triaged", item_id=f"{list_id}-1")
        await stream.seen_or_next("item.triaged", item_id=f"{list_id}-2")
    await flock.stop()
    flock = await with_model(tmp_path, fake_model).start()
    try:
        async with Stream(flock.session, {"recent": "20"}) as view:
            await view.take(len(flock.flock.store.events_after(0)))
            assert pending_from(view.events) == {(f"{list_id}-1", "triage"), (f"{list_id}-2", "triage")}
            assert await flock.verdict(f"{list_id}-2", "triage", approve=False) == 204
            await view.until("item.skipped", item_id=f"{list_id}-2")
        assert pending_from(view.events) == {(f"{list_id}-1", "triage")}
    finally:
        await flock.stop()
