"""The soul's faults as a real `soulstack soul` process: a full disk (a tmpfs, root only: CI is),
and a second soul on the same soulDir.

A full disk while it lives is named as such on /health (storage_failing, not provider_failing);
a start on a full disk is one line and exit 2. One soul per soulDir: a second is refused in one
line, and a soul killed -9 leaves no lock behind.
"""

import json
import signal

import aiohttp

from soulstack.fakes.soul_body import RecordingBody
from tests.helpers import free_port
from tests.faults import small_disk
from tests.helpers import until_real as until
from tests.soul.helpers import start_soul, stop_with_ctrl_c, write_config

QUICK = {"defaultSleepMinutes": 0.05, "minSleepMinutes": 0.05, "errorSleepMinutes": 0.05}


def quick_config(folder, body, port):
    """The test soul's config in `folder`, waking every 3 seconds on its own."""
    path = write_config(folder, body, port)
    cfg = json.loads(path.read_text())
    cfg["loop"].update(QUICK)
    path.write_text(json.dumps(cfg))
    return path


async def health(http, port):
    try:
        async with http.get(f"http://127.0.0.1:{port}/health") as response:
            return await response.json() if response.status == 200 else None
    except aiohttp.ClientConnectionError:
        return None


def alarm_codes(state):
    return {alarm["code"] for alarm in (state or {}).get("alarms", [])}


async def test_a_full_disk_is_a_storage_alarm_and_a_start_on_one_is_one_line(tmp_path):
    async with RecordingBody() as body:
        with small_disk(tmp_path, "8m") as disk:
            port = free_port()
            config = quick_config(disk.path, body, port)
            log = tmp_path / "soul.log"
            process = start_soul(config, log)
            try:
                async with aiohttp.ClientSession() as http:
                    await until(lambda: health(http, port), what="the soul's /health")
                    disk.fill()
                    state = await until(
                        lambda: _with_alarm(http, port, "storage_failing"), what="a storage alarm", timeout=30
                    )
                    assert "provider_failing" not in alarm_codes(state)
                    assert (
                        "disk is full" in next(a for a in state["alarms"] if a["code"] == "storage_failing")["message"]
                    )
                    async with http.post(f"http://127.0.0.1:{port}/nudge", json={"reason": "are you there?"}) as r:
                        assert r.status == 503, await r.text()  # never a 202 for a nudge it could not keep
                    disk.free()
                    async with http.post(f"http://127.0.0.1:{port}/nudge", json={"reason": "are you there?"}) as r:
                        assert r.status == 202, await r.text()
                    await until(
                        lambda: _without_alarm(http, port, "storage_failing"), what="the alarm to clear", timeout=30
                    )
            finally:
                await stop_with_ctrl_c(process)

            disk.fill()
            process = start_soul(config, tmp_path / "second.log")
            assert process.wait(timeout=60) == 2
            err = (tmp_path / "second.log").read_text()
            assert "Traceback" not in err, err
            assert "cannot start" in err.strip().splitlines()[-1] and "disk is full" in err, err
            disk.free()


async def _with_alarm(http, port, code):
    state = await health(http, port)
    return state if code in alarm_codes(state) else None


async def _without_alarm(http, port, code):
    state = await health(http, port)
    return state is not None and code not in alarm_codes(state)


async def test_one_soul_per_soul_dir_and_kill_9_leaves_no_lock(tmp_path):
    async with RecordingBody() as body:
        port = free_port()
        config = write_config(tmp_path, body, port)
        first = start_soul(config, tmp_path / "first.log")
        try:
            async with aiohttp.ClientSession() as http:
                await until(lambda: health(http, port), what="the first soul's /health")
                # The same soulDir on another port: refused before it touches a file.
                other = json.loads(config.read_text())
                other["nudge"]["port"] = free_port()
                second_config = tmp_path / "second.config.json"
                second_config.write_text(json.dumps(other))
                second = start_soul(second_config, tmp_path / "second.log")
                assert second.wait(timeout=60) == 2
                err = (tmp_path / "second.log").read_text().strip().splitlines()
                assert "another soul is living in this folder" in err[-1] and "Traceback" not in "\n".join(err)
                first.send_signal(signal.SIGKILL)
                first.wait(timeout=10)
                third = start_soul(config, tmp_path / "third.log")  # kill -9 left no lock behind
                try:
                    assert await until(lambda: health(http, port), what="a soul after the kill -9")
                finally:
                    assert await stop_with_ctrl_c(third) == 0
        finally:
            if first.poll() is None:
                first.kill()
