"""The robot's nudges carry a `nudge_id`, and a resend keeps it: the soul counts the nudge once.

The firmware under real MicroPython (the simulator at its default 256K heap) sends a real soul a
`heard` nudge (its words were lost: ears is unreachable) through a loopback proxy that passes the
nudge to the soul and then drops the robot's connection, as a Wi-Fi link dying after the request
went out does (tests/fakes/dropping_proxy.py). The robot takes the nudge as failed and sends it
again 2 s later (body.py's HEARD_RETRY_MS); before nudge ids the soul kept it twice.
"""

import asyncio
import json


from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.firmware.core import serial_frames
from soulstack.protocol.nudges import parse_nudge_id
from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.ears.helpers import speech_wav
from tests.fakes.dropping_proxy import DroppingProxy
from tests.helpers import until
from tests.soul.helpers import Running, a_soul, fell_asleep, sleep_long


async def tap(robot):
    robot.touch()
    await asyncio.sleep(0.15)  # the face loop looks at the screen every 50 ms
    robot.touch(down=False)


async def test_a_nudge_the_robot_sends_again_after_a_lost_answer_reaches_the_soul_once(tmp_path):
    screen = []
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake)
        async with Running(soul) as running:
            await fell_asleep(soul)
            proxy = DroppingProxy(int(running.url.rsplit(":", 1)[1]), drop=1)
            async with proxy as proxy_port:
                robot = Simulator(
                    free_port(),
                    nudge_url=f"http://127.0.0.1:{proxy_port}/nudge",
                    show=screen.append,
                    # Nobody listens at ears' address: what was said is lost, and a `heard` nudge says so.
                    config={"ears_url": f"http://127.0.0.1:{free_port()}/u", "listen": {"conversation": False}},
                )
                robot.start()
                try:
                    assert await asyncio.to_thread(robot.wait_until_serving), robot.last_words
                    robot.release()
                    await tap(robot)
                    await until(lambda: "mic: live" in screen, "the microphone to open")
                    robot.play_into_room(speech_wav())
                    await proxy.wait_for_answers(1)  # the resend, answered
                finally:
                    robot.stop()
            sent = [json.loads(request) for request in proxy.requests]
            assert len(sent) == 2, sent  # the soul had the first; the robot heard nothing back and sent it again
            assert soul.inbox.received == 1
            kept = [entry.nudge.reason for entry in soul.inbox.entries] or [
                b["messages"][-1] for b in fake.bodies if "couldn't hear" in json.dumps(b["messages"][-1])
            ]
            assert len(kept) == 1, kept
    assert sent[0] == sent[1] and "couldn't hear" in sent[0]["reason"]
    assert parse_nudge_id(sent[0]["nudge_id"]) == sent[0]["nudge_id"]  # an id the soul takes


def test_the_robot_s_nudge_ids_differ_per_nudge_and_per_boot_and_travel_up_the_cable():
    from soulstack.firmware.core.nudges import NudgeIds

    first, second = NudgeIds(), NudgeIds()
    ids = [first.next(), first.next(), second.next()]
    assert len(set(ids)) == 3 and all(parse_nudge_id(i) == i for i in ids)
    frame = serial_frames.decode(serial_frames.nudge("a face appeared", nudge_id=ids[0]))
    assert frame == {"nudge": "a face appeared", "nudge_id": ids[0]}
