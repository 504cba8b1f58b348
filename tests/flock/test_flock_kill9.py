"""kill -9 of the flock, the soul and the robot's body (the firmware simulator), all real processes: nothing is lost.

Pending approvals stay pending; what the flock had not yet told the soul (the soul
was down) or the body (held back by the interval) is told after the restart, once,
merged; a dead soul or body never stalls a list.
"""

import asyncio

from soulstack.fakes.anthropic_api import FakeAnthropic, tool_use
from soulstack.fakes.soul_body import RecordingBody
from tests.flock.helpers import Brain
from tests.flock.processes import FlockProcess, SimBody, SoulProcess, event_id, texts, told_cursor
from tests.helpers import until_real as until


def sleeps(body):
    return tool_use("sleep", {"minutes": 60})


def told_to_soul(fake, line):
    """How many times `line` is in the soul's history, as its latest model call saw it."""
    if not fake.bodies:
        return 0
    return sum(texts(message).count(line) for message in fake.bodies[-1]["messages"])


async def flock_and_soul(tmp_path, flock_fake, soul_fake, body):
    """A flock whose voice is the soul (told at once), and the soul living with `body`: both started."""
    flock = FlockProcess(tmp_path, flock_fake.base_url, {})
    soul = SoulProcess(tmp_path, body, soul_fake.base_url, flock.url)
    flock.config["soul"] = {"url": soul.url, "minIntervalSeconds": 0}
    soul.start()
    await flock.start()
    return flock, soul


async def test_a_question_the_soul_never_heard_survives_the_kill_9_of_all_three(tmp_path):
    robot = await SimBody().serving()  # the soul's body: the real firmware in the simulator
    async with FakeAnthropic(default=Brain()) as flock_fake, FakeAnthropic(default=sleeps) as soul_fake:
        flock, soul = await flock_and_soul(tmp_path, flock_fake, soul_fake, robot)
        try:
            await until(lambda: "waking 1:" in soul.log_text(), what="the soul's first waking")
            soul.kill()  # the soul is gone: the flock's nudge is refused (nobody listens) and must wait
            list_id = await flock.new_list("- research alpha")
            item_id = f"{list_id}-1"
            await until(lambda: flock.pending(), what="the approval")
            pending = flock.pending()
            triaged = event_id(flock, "item.triaged", item_id)
            assert told_cursor(flock, "soul") == triaged - 1  # held: everything before it told, it not

            flock.kill()
            robot.kill()  # all three are dead now
            robot = await SimBody().serving()
            soul.move_to(robot)
            soul.start()  # back at once with the flock, whose first try may still find it starting: it retries
            await flock.start()
            assert flock.pending() == pending  # still waiting, same deadline
            line = f"your flock asks: the Sentry needs your OK to start on 'research alpha' (item {item_id})"
            await until(lambda: told_to_soul(soul_fake, line), what="the question, after the restarts")
            # Told once, and marked so: the cursor is past it, so a later start never tells it again.
            await until(lambda: (told_cursor(flock, "soul") or 0) >= triaged, what="the cursor past the question")
            beta = await flock.new_list("- research beta")
            await until(lambda: told_to_soul(soul_fake, f"(item {beta}-1)"), what="the next question")
            assert told_to_soul(soul_fake, line) == 1
        finally:
            soul.stop()
            flock.stop()
            robot.stop()
        assert "Traceback" not in flock.log.read_text() and "Traceback" not in soul.log_text()


async def test_a_soul_killed_9_while_it_thinks_about_the_flocks_question_still_has_it(tmp_path):
    hold, hung = asyncio.Event(), []

    async def thinks_too_long_once(body):
        if "your flock asks" in texts(body["messages"][-1]) and not hung:
            hung.append(body)
            await hold.wait()  # the soul is killed while its model thinks
        return tool_use("sleep", {"minutes": 60})

    async with (
        FakeAnthropic(default=Brain()) as flock_fake,
        FakeAnthropic(default=thinks_too_long_once) as soul_fake,
        RecordingBody() as body,
    ):
        flock, soul = await flock_and_soul(tmp_path, flock_fake, soul_fake, body)
        try:
            await until(lambda: "waking 1:" in soul.log_text(), what="the soul's first waking")
            list_id = await flock.new_list("- research alpha")
            line = f"your flock asks: the Sentry needs your OK to start on 'research alpha' (item {list_id}-1)"
            await until(lambda: hung, what="the soul thinking about the question")
            assert told_cursor(flock, "soul") >= event_id(flock, "item.triaged", f"{list_id}-1")  # the soul took it
            soul.kill()
            hold.set()
            soul.start()
            await until(lambda: len(soul_fake.bodies) >= 3, what="the soul's first model call after the restart")
            assert told_to_soul(soul_fake, line) == 1  # in its history once, neither lost nor doubled
        finally:
            soul.stop()
            flock.stop()
