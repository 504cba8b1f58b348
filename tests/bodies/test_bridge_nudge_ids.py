"""The serial bridge passes the robot's `nudge_id` on: a nudge the robot sent over Wi-Fi, whose answer it
lost, and then sent up the cable (firmware/body.py's `deliver`) reaches the soul once.

A real soul, the real bridge, a fake robot on a real pty (tests/fakes/serial_device.py).
"""

import pytest

from soulstack.fakes.anthropic_api import FakeAnthropic
from soulstack.fakes.soul_body import RecordingBody
from soulstack.protocol.nudge_sender import Debouncer, NudgeSender
from tests.bodies.helpers import Bridge, wait_until
from tests.fakes.serial_device import FakeSerialDevice
from tests.helpers import until
from tests.soul.helpers import Running, a_soul, fell_asleep, sleep_long


@pytest.fixture
def device():
    fake = FakeSerialDevice()
    yield fake
    fake.unplug()


async def test_a_nudge_the_robot_sent_over_wifi_and_then_up_the_cable_reaches_the_soul_once(tmp_path, device):
    async with RecordingBody() as body, FakeAnthropic(default=sleep_long) as fake:
        soul = a_soul(tmp_path, body, fake, nudge={"minIntervalSeconds": 3600})
        async with Running(soul) as running:
            await fell_asleep(soul)
            assert (await running.post("/nudge", {"reason": "the first nudge"}))[0] == 202
            await fell_asleep(soul, 2)  # it woke for that one: the next wait in its inbox for an hour
            nudges = NudgeSender(running.url + "/nudge", debouncer=Debouncer(min_interval_s=0))
            async with Bridge(lambda: device.path, nudges=nudges) as bridge:
                await wait_until(bridge.online)
                # Over Wi-Fi first: the soul keeps it (the robot never heard its 202).
                wifi = {"reason": "someone picked me up", "nudge_id": "r0badf00d-3"}
                assert (await running.post("/nudge", wifi))[0] == 202
                # Then up the cable, the same nudge under the same id; then one without an id, and one whose id
                # the soul would refuse (the bridge sends that one under an id of its own).
                device.send({"nudge": "someone picked me up", "nudge_id": "r0badf00d-3"})
                device.send({"nudge": "someone pressed my button"})
                device.send({"nudge": "someone touched my face", "nudge_id": "not an id!"})

                def told():
                    return "; ".join(entry.nudge.reason for entry in soul.inbox.entries).split("; ")

                await until(lambda: "someone touched my face" in told() and not nudges.waiting, "the cable's nudges")
    assert sorted(told()) == ["someone picked me up", "someone pressed my button", "someone touched my face"]
    assert [e.nudge.nudge_id for e in soul.inbox.entries if e.nudge.reason == "someone picked me up"] == ["r0badf00d-3"]
