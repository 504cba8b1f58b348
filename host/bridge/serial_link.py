"""SerialLink: requests to the robot over its USB serial port, matched to replies by id.

The link keeps itself up. A supervisor task opens the port (re-finding it each
time, so `auto` and /dev/serial/by-id links follow a replug), a reader thread
turns the byte stream into frames, and a probe notices a device that is
attached but silent. Whenever the port fails, every request still waiting is
failed honestly and the supervisor tries again every `reopen_interval_s`.

The link knows which device it talks to (ports.identity: USB serial number or
VID:PID, else the node itself), learnt at the first open. A path that later
holds another device is not the robot: it is not opened, no frame is written
to it, and /status stays offline with the reason in the log and in every 503.

States, as /status sees them:
    closed       no port open (unplugged, wrong path, permission, someone else's device): act -> 503
    unanswered   port open, but the last status probe got no reply: act -> 503, and
                 requests already waiting fail at once
    open         port open and answering frames
"""

import asyncio
import concurrent.futures
import logging
import threading
import time
from typing import Any

from soulstack.protocol.body_app import BodyUnavailable
from soulstack.protocol.nudges import BadNudge, parse_codes, parse_heard, parse_nudge_id
from soulstack.firmware.core import serial_frames
from soulstack.serial_ports import PortError, explain_open_error, identity, open_serial

log = logging.getLogger(__name__)

# The firmware's own log lines (firmware/core/log.py): shown, unlike the rest of the noise.
ROBOT_LOG = b"[soulstack]"
# A noise line longer than this (a runaway log, a binary dump) is dropped, not buffered forever.
MAX_LINE_BYTES = 1 << 20


class DeviceError(Exception):
    """The device answered a request with an error status other than 503."""

    def __init__(self, status: int, message: str):
        super().__init__(f"the robot answered {status}: {message}")
        self.status = status


def nudge_extras(frame: dict) -> dict:
    """The `heard`, `speaker`, `nudge_id` and `codes` a nudge frame carries, as NudgeSender.nudge takes them. A
    malformed one is logged and left out: the reason still reaches the soul. The robot's id is passed on as
    it is: the robot may have sent the same nudge over Wi-Fi, or send it again."""
    extras: dict[str, Any] = {"heard": None, "speaker": None, "nudge_id": None, "codes": None}
    try:
        extras["codes"] = parse_codes(frame.get("codes"))
    except BadNudge as problem:
        log.warning("the robot's nudge carried unusable 'codes' (%s); sent without them", problem)
    try:
        extras["nudge_id"] = parse_nudge_id(frame.get("nudge_id"))
    except BadNudge as problem:
        log.warning("the robot's nudge carried an unusable 'nudge_id' (%s); sent with one of the bridge's", problem)
    if frame.get("heard") is not None:
        try:
            extras["heard"] = parse_heard(frame["heard"])
        except BadNudge as problem:
            log.warning("the robot's nudge carried an unusable 'heard' (%s); sent without it", problem)
    speaker = frame.get("speaker")
    if isinstance(speaker, str) and speaker.strip():
        extras["speaker"] = speaker.strip()
    elif speaker is not None:
        log.warning("the robot's nudge carried a 'speaker' that is not a name (%r); sent without it", speaker)
    return extras


class SerialLink:
    """One robot on one serial port. Run `run()` as a task; call `request()` from the same loop.

    `locate()` returns the path to open (raising PortError when there is none);
    `on_nudge(reason, heard=, speaker=, nudge_id=, codes=)` and `on_ready(info)` receive the device's unsolicited frames.
    """

    def __init__(
        self,
        locate,
        baud: int = 115200,
        on_nudge=None,
        on_ready=None,
        request_timeout_s: float = 55.0,
        probe_interval_s: float = 1.0,
        probe_timeout_s: float = 2.0,
        reopen_interval_s: float = 0.5,
        clock=time.monotonic,
        open_port=open_serial,
        identify=identity,
    ):
        self.locate = locate
        self.baud = baud
        self.on_nudge = on_nudge or (lambda reason, heard=None, speaker=None, nudge_id=None, codes=None: None)
        self.on_ready = on_ready or (lambda info: None)
        self.request_timeout_s = request_timeout_s
        self.probe_interval_s = probe_interval_s
        self.probe_timeout_s = probe_timeout_s
        self.reopen_interval_s = reopen_interval_s
        self.clock = clock
        self.open_port = open_port
        self.identify = identify
        self.identity: str | None = None  # the robot's, learnt at the first open

        self.path: str | None = None
        self.reason = "the bridge has not opened the serial port yet"  # why not open, for messages
        self.answering: bool | None = None  # None: just opened, not probed yet (requests may go)
        self.device_info: dict | None = None  # the last `ready` frame
        self._port = None
        self._generation = 0  # bumps on every open, so stale thread callbacks are ignored
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = 0
        self._last_heard = 0.0
        self._lost = asyncio.Event()
        self._port_lock = threading.Lock()  # a port's close (reader thread) vs. waking its reader (loop)
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="serial-write")
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- state ---------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._port is not None

    def unavailable(self) -> BodyUnavailable | None:
        """Why the robot cannot act now, or None when it can."""
        if not self.is_open:
            return BodyUnavailable(
                f"the robot is not connected over USB: {self.reason}; the bridge reconnects by itself once it is back"
            )
        if self.answering is False:
            return BodyUnavailable(
                f"the robot on {self.path} is not answering over serial (no reply to a status probe within "
                f"{self.probe_timeout_s:g} s); it may be restarting, or not running soulstack's firmware"
            )
        return None

    # --- requests ------------------------------------------------------------

    async def request(self, endpoint: str, body: dict, timeout_s: float | None = None) -> dict:
        """Send one request; return the device's 2xx body, or raise BodyUnavailable / DeviceError."""
        problem = self.unavailable()
        if problem:
            raise problem
        return await self._exchange(endpoint, body, timeout_s or self.request_timeout_s)

    async def status(self, timeout_s: float | None = None) -> dict:
        """The device's own /status, or {"online": false, "reason": why} when it cannot be asked or does not answer."""
        problem = self.unavailable()
        if problem:
            return {"online": False, "reason": str(problem)}  # the prober keeps asking, and flips this back
        try:
            return await self._exchange("status", {}, timeout_s or self.probe_timeout_s)
        except (BodyUnavailable, DeviceError) as error:
            return {"online": False, "reason": str(error)}

    async def _exchange(self, endpoint, body, timeout_s):
        self._next_id += 1
        frame_id = self._next_id
        future = asyncio.get_running_loop().create_future()
        self._pending[frame_id] = future
        try:
            await self._write(serial_frames.request(frame_id, endpoint, body).encode("utf-8"))
            try:
                status, answer = await asyncio.wait_for(future, timeout_s)
            except TimeoutError:
                if endpoint == "status":
                    self._went_silent(timeout_s)
                raise BodyUnavailable(
                    f"the robot did not answer /{endpoint} over serial within {timeout_s:g} s"
                ) from None
        finally:
            self._pending.pop(frame_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # already surfaced another way; keep asyncio from warning about it
        if 200 <= status < 300:
            return answer
        message = answer.get("message") if isinstance(answer, dict) else None
        if status == 503:
            raise BodyUnavailable(message or f"the robot cannot {endpoint} right now")
        raise DeviceError(status, message or "no message")

    async def _write(self, data: bytes):
        port, generation = self._port, self._generation
        if port is None:
            unavailable = self.unavailable()
            assert unavailable is not None, "without a port the robot is unavailable"
            raise unavailable
        try:
            # A blocked pty or USB buffer must not stall the event loop: write on one worker thread, in order.
            await asyncio.get_running_loop().run_in_executor(self._writer, port.write, data)
        except Exception as error:  # pyserial raises SerialException, OSError or a write timeout
            self._connection_lost(generation, f"writing to {self.path} failed ({error})")
            raise self.unavailable() from None

    # --- frames from the device ---------------------------------------------

    def _on_frame(self, generation: int, frame: dict):
        if generation != self._generation:
            return
        self._last_heard = self.clock()
        self._set_answering(True)
        if "id" in frame and "status" in frame:
            future = self._pending.get(frame["id"]) if isinstance(frame["id"], int) else None
            if future is None or future.done():
                log.debug("reply to a request nobody waits for any more: id %r", frame["id"])
                return
            status = frame["status"] if isinstance(frame["status"], int) else 502
            future.set_result((status, frame.get("body")))
        elif "nudge" in frame:
            if isinstance(frame["nudge"], str):
                self.on_nudge(frame["nudge"], **nudge_extras(frame))
        elif "ready" in frame:
            info = frame["ready"] if isinstance(frame["ready"], dict) else None
            # The firmware repeats `ready` for a minute after boot or a Wi-Fi change: log only news.
            (log.info if info != self.device_info else log.debug)("the robot says it is ready: %s", info)
            self.device_info = info
            self.on_ready(info)
        else:
            log.debug("ignored a frame of no known kind: %s", frame)

    def _went_silent(self, timeout_s: float):
        """A status probe went unanswered: the robot is not answering, so nobody waits on it any longer."""
        self._set_answering(False)
        self._fail_waiting(
            f"the robot on {self.path} stopped answering over serial (no reply to a status probe "
            f"within {timeout_s:g} s)"
        )

    def _fail_waiting(self, reason: str):
        for future in self._pending.values():
            if not future.done():
                future.set_exception(BodyUnavailable(reason))

    def _set_answering(self, answering: bool | None):
        if answering != self.answering:
            log.info("the robot on %s is %s", self.path, "answering" if answering else "NOT answering")
        self.answering = answering

    # --- the port's life -----------------------------------------------------

    async def run(self):
        """Keep the port open until cancelled: open, read, probe; on loss fail waiters and reopen."""
        self._loop = asyncio.get_running_loop()
        try:
            while True:
                if not await self._open():
                    await asyncio.sleep(self.reopen_interval_s)
                    continue
                prober = asyncio.create_task(self._probe_while_open())
                try:
                    await self._lost.wait()
                finally:
                    prober.cancel()
                await asyncio.sleep(self.reopen_interval_s)
        finally:
            self._close(self._generation, "the bridge is stopping")
            self._writer.shutdown(wait=False)

    async def _open(self) -> bool:
        try:
            path = self.locate()
            self._check_identity(path)
            port = await asyncio.to_thread(self.open_port, path, self.baud)
        except PortError as error:
            if str(error) != self.reason:
                log.warning("%s", error)
            self.reason = str(error)
            return False
        self._generation += 1
        self._port, self.path, self.answering = port, path, None
        self._lost.clear()
        log.info("opened %s", path)
        threading.Thread(
            target=self._read_lines, args=(port, self._generation), daemon=True, name="serial-read"
        ).start()
        return True

    def _check_identity(self, path: str):
        """PortError unless `path` holds the robot this bridge has talked to (the first device, at first)."""
        try:
            who = self.identify(path)
        except OSError as error:
            raise PortError(explain_open_error(path, error)) from None
        if self.identity is None:
            log.info("the robot is %s", who)
            self.identity = who
        elif who != self.identity:
            raise PortError(
                f"{path} now holds another device ({who}), not the robot this bridge talked to ({self.identity}); "
                "no frames are sent to it. Plug the robot back in, or restart the bridge to talk to this device"
            )

    async def _probe_while_open(self):
        """Ask for /status whenever the device has been quiet; no answer marks it not answering."""
        while True:
            quiet_for = self.clock() - self._last_heard
            if quiet_for >= self.probe_interval_s or self.answering is not True:
                try:
                    await self._exchange("status", {}, self.probe_timeout_s)
                except (BodyUnavailable, DeviceError):
                    pass  # _exchange has already recorded the silence, or the port is gone
                quiet_for = 0.0
            await asyncio.sleep(max(0.05, self.probe_interval_s - quiet_for))

    def _read_lines(self, port, generation: int):
        """Reader thread: bytes -> lines -> frames, handed to the loop. Noise lines are only logged.

        This thread alone closes its port (when the generation moves on), so a
        closed descriptor number can never be reused under a read in progress.
        """
        loop = self._loop
        assert loop is not None, "the reader starts once the bridge's loop is known"
        buffer = b""
        try:
            while generation == self._generation:
                chunk = port.read(1)  # waits up to the port timeout, so the loop above notices a close
                if not chunk:
                    continue
                buffer += chunk + port.read(port.in_waiting)
                *lines, buffer = buffer.split(b"\n")
                if len(buffer) > MAX_LINE_BYTES:
                    buffer = b""
                for line in lines:
                    frame = serial_frames.decode(line)
                    if frame is None and line.startswith(ROBOT_LOG):
                        log.info("robot: %s", line.decode("utf-8", "replace").rstrip("\r"))
                    elif frame is None:
                        log.debug("serial noise: %r", line[:200])
                    else:
                        loop.call_soon_threadsafe(self._on_frame, generation, frame)
        except Exception as error:  # the port went away under us
            if generation == self._generation:
                loop.call_soon_threadsafe(self._connection_lost, generation, f"reading {self.path} failed ({error})")
        finally:
            with self._port_lock:
                try:
                    port.close()
                except Exception:  # closing a port that vanished can fail; it is gone either way
                    pass

    def _connection_lost(self, generation: int, reason: str):
        if generation != self._generation or self._port is None:
            return
        log.warning("lost the robot: %s", reason)
        self._close(generation, reason)

    def _close(self, generation: int, reason: str):
        port, self._port = self._port, None
        self.answering = False
        self.reason = reason
        self._generation = generation + 1  # the reader thread sees this, stops and closes the port
        if port is not None and hasattr(port, "cancel_read"):
            # Wake the reader now rather than at its next read timeout. Under the lock: a reader that
            # failed first may be closing the port this very moment, and writing to a descriptor it
            # just closed fails (EBADF) or, reused, lands in some other file.
            with self._port_lock:
                if getattr(port, "is_open", True):
                    port.cancel_read()
        self._fail_waiting(f"the USB connection to the robot was lost before it answered: {reason}")
        self._lost.set()
