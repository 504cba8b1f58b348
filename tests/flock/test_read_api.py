"""The read API (docs/flock-api.md) over HTTP against a real flock: the real anthropic SDK against
the fake Messages API (helpers.py's Brain), a list approved to its end, read back before and after
a restart on the same data folder, and behind the flock's token."""

import aiohttp

from soulstack.flock.lists.flow import FlockConfig
from tests.flock.helpers import Flock

CONFIG = dict(heartbeat_s=1.0, lists_per_minute=1000, model_backoff_s=0.01)


async def finish_a_list(flock) -> str:
    """One list of three items: approved to the end, a triage rejected, a split answered by the Elder."""
    list_id = await flock.new_list("find the best bakery nearby\nsplit: groceries\nplan the move")
    async with flock.events(list_id) as stream:
        for n, approve in ((1, True), (2, True), (3, False)):
            await stream.seen_or_next("item.triaged", item_id=f"{list_id}-{n}")
            assert await flock.verdict(f"{list_id}-{n}", "triage", approve) == 204
        for n in (1, 2):
            await stream.seen_or_next("item.answered", item_id=f"{list_id}-{n}")
            assert await flock.verdict(f"{list_id}-{n}", "output") == 204
        await stream.seen_or_next("list.finished", timeout=10)
    return list_id


def check_the_finished_list(lists, detail, list_id):
    assert [each["list_id"] for each in lists["lists"]][0] == list_id  # newest first
    summary = lists["lists"][0]
    assert summary == detail["list"]
    assert summary["owner"] == "ada" and summary["title"] == "find the best bakery nearby"
    assert summary["state"] == "finished" and summary["item_count"] == 3
    assert summary["created_at"] <= summary["finished_at"]
    assert summary["tokens_used"] > 0 and summary["token_budget"] == FlockConfig().token_budget
    first, second, third = detail["items"]
    # The answers stay, word for word, after both verdicts.
    assert first["stage"] == "done" and first["answer"].startswith("done: ") and first["crow"]
    assert [(v["kind"], v["verdict"]) for v in first["verdicts"]] == [("triage", "approved"), ("output", "approved")]
    assert first["verdicts"][0]["note"].startswith("the Sentry's call: solo (research)")
    assert first["verdicts"][1]["note"] == f"the answer of {first['crow']}; approved by a person"
    assert all(v["at"].endswith("Z") for v in first["verdicts"])
    assert second["answer"].startswith("The Elder's ruling") and len(second["crows"]) == 2 and second["mode"] == "split"
    assert third["stage"] == "skipped" and third["answer"] is None and third["skipped_reason"] == "triage rejected"
    assert [(v["kind"], v["verdict"]) for v in third["verdicts"]] == [("triage", "rejected")]


async def test_finished_answers_stay_readable_across_a_restart(tmp_path, fake_model):
    flock = await Flock(tmp_path, model=fake_model[1], config=FlockConfig(**CONFIG)).start()
    try:
        older = await flock.new_list("water the plants", requester="bo")
        list_id = await finish_a_list(flock)
        status, lists = await flock.get("/api/lists")
        assert status == 200 and [each["list_id"] for each in lists["lists"]] == [list_id, older]
        status, detail = await flock.get(f"/api/lists/{list_id}")
        assert status == 200
        check_the_finished_list(lists, detail, list_id)
        status, body = await flock.get("/api/lists/nosuchlist")
        assert status == 404 and "no list 'nosuchlist'" in body["message"]
    finally:
        await flock.stop()
    again = await Flock(tmp_path, model=fake_model[1], config=FlockConfig(**CONFIG)).start()
    try:
        status, lists_after = await again.get("/api/lists")
        status, detail_after = await again.get(f"/api/lists/{list_id}")
        assert status == 200 and detail_after == detail  # the same, read from the store
        assert lists_after["lists"][0] == lists["lists"][0]
    finally:
        await again.stop()


async def test_the_read_api_is_behind_the_flocks_token(tmp_path):
    flock = await Flock(tmp_path, model=None, token="s3cret", config=FlockConfig(**CONFIG)).start()
    try:
        list_id = await flock.new_list("water the plants")
        async with aiohttp.ClientSession(f"http://127.0.0.1:{flock.port}") as stranger:
            for path in ("/api/lists", f"/api/lists/{list_id}"):
                async with stranger.get(path) as response:
                    assert response.status == 401 and "message" in await response.json()
        status, body = await flock.get("/api/lists")  # the flock's own client carries the token
        assert status == 200 and body["lists"][0]["list_id"] == list_id
    finally:
        await flock.stop()
