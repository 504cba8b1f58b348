"""The flock drives the firmware simulator (`soulstack body sim`: the real MicroPython firmware,
fake hardware) through `body` in its config file: it speaks once and shows a face for a list that
needs a person; a line held back by the interval is spoken after a flock kill -9 and restart;
a body killed -9 never stalls a list."""

import asyncio


from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.flock.helpers import Brain
from tests.flock.processes import FlockProcess, event_id, told_cursor
from tests.helpers import until_real as until


def says(screen):
    return [line for line in screen if line.startswith("says: ")]


async def test_the_simulator_speaks_once_hears_the_rest_after_a_kill_9_and_its_death_stalls_nothing(tmp_path):
    screen = []
    port = free_port()
    sim = Simulator(port, show=screen.append).start()
    try:
        assert await asyncio.to_thread(sim.wait_until_serving)
        sim.release()
        async with FakeAnthropic(default=Brain()) as fake:
            body = {"url": f"http://127.0.0.1:{port}", "minIntervalSeconds": 30}
            flock = FlockProcess(tmp_path, fake.base_url, {"body": body})
            await flock.start()
            try:
                moths = await flock.new_list("- research moths")
                await until(lambda: says(screen), what="the simulator speaking")
                assert says(screen) == [
                    f"says: \"the Sentry needs your OK to start on 'research moths' (item {moths}-1)\""
                ]
                assert "face: doubtful" in screen  # crows flying: the robot's thinking face

                # A second question within the interval waits, untold; the flock dies and comes back: it is spoken.
                owls = await flock.new_list("- research owls")
                await until(lambda: len(flock.pending()) == 2, what="the second approval")
                assert told_cursor(flock, "body") == event_id(flock, "item.triaged", f"{owls}-1") - 1
                assert len(says(screen)) == 1
                flock.kill()
                await flock.start()
                await until(lambda: len(says(screen)) == 2, what="the held question, after the restart")
                assert (
                    says(screen)[1] == f"says: \"the Sentry needs your OK to start on 'research owls' (item {owls}-1)\""
                )

                # The body dies: the flock carries on and finishes the list.
                sim.process.kill()
                sim.process.wait(timeout=10)
                assert await flock.verdict(f"{moths}-1", "triage") == 204
                await until(lambda: any(target == "output" for _, target, _ in flock.pending()), what="the answer")
                assert await flock.verdict(f"{moths}-1", "output") == 204
                await until(lambda: [e for e in flock.events("list.finished") if e["list_id"] == moths], what="the end")
            finally:
                flock.stop()
            assert "Traceback" not in flock.log.read_text()
    finally:
        sim.stop()
