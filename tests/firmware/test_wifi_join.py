"""The robot's Wi-Fi join ends at once when the port says it failed for good, and not before.

Real MicroPython, the robot's own ESP32 HAL (hal/generic.py on hal/esp32.py) and the doubled `network`
(host/sim/doubles/network.py, which journals every status() it answers). What the ESP32 port reports
while it joins (ports/esp32/network_wlan.c): STAT_WRONG_PASSWORD and STAT_NO_AP_FOUND as soon as ESP-IDF
says so; other failures it retries through, and a status may pass a failure code and go back to
STAT_CONNECTING. The join used to look at the status for 10 s whatever it said (~40 looks).

Counted in looks at the status and connect() calls, never in seconds: the same on a busy machine.
"""

import pytest

from soulstack.sim.runner import Simulator
from tests.helpers import free_port
from tests.helpers import poll

STAT_HANDSHAKE_TIMEOUT = 204  # the ESP32 port's (modnetwork_globals.h), as the double has it


@pytest.fixture
def robot():
    started = []

    def start(wifi):
        lines = []
        simulator = Simulator(free_port(), hal="generic", world={"wifi": wifi}, show=lines.append).start()
        simulator.release()
        started.append(simulator)
        return simulator, lines

    yield start
    for simulator in started:
        simulator.stop()


def looks_between_joins(simulator) -> int:
    """How many times the robot looked at the status between its first connect() and its second."""
    calls = [entry["call"] for entry in simulator.calls()]
    first = calls.index("WLAN.connect")
    second = calls.index("WLAN.connect", first + 1)
    return calls[first:second].count("WLAN.status")


@pytest.mark.parametrize(
    "wifi, said",
    [
        ("wrong_password", "wrong Wi-Fi password (check wifi.password)"),
        ("no_ap", "Wi-Fi network not found (check wifi.ssid)"),
    ],
)
async def test_a_wrong_password_or_no_network_ends_the_join_at_once(robot, wifi, said):
    simulator, lines = robot(wifi)
    # It says why, then tries again after its backoff (1 s, then longer): the second connect() ends the count.
    assert await poll(lambda: len(simulator.calls("WLAN.connect")) >= 2, 40), simulator.last_words
    assert [line for line in lines if line.startswith("ready:")][0] == f"ready: ip=- wifi={said}"
    # Two looks say it failed, one reads the reason, two at the next try: not ten seconds of looking (~40).
    assert looks_between_joins(simulator) <= 6, simulator.calls("WLAN.status")


async def test_a_failure_the_port_retries_through_does_not_end_the_join(robot):
    simulator, lines = robot("flaky")

    def joined():
        return any(line == "ready: ip=127.0.0.1 wifi=connected" for line in lines)

    assert await poll(joined, 40), lines
    calls = simulator.calls()
    joining = calls[[entry["call"] for entry in calls].index("WLAN.connect") :]
    seen = [entry["status"] for entry in joining if entry["call"] == "WLAN.status"]
    assert seen[0] == STAT_HANDSHAKE_TIMEOUT  # it did look while the port passed a failure through
    assert len(simulator.calls("WLAN.connect")) == 1  # and kept waiting: no second try
    assert [line for line in lines if line.startswith("ready:")][0] == "ready: ip=127.0.0.1 wifi=connected"
