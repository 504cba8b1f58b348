"""A robot on a USB cable, for tests: the far end of an os.openpty() pair speaking SERIAL.md.

The bridge (or `soulstack flash`) opens `device.path` with pyserial exactly as
it would open /dev/ttyACM0. The fake answers request frames with the status
and body a real body would give, prints boot noise and REPL chatter around
them, can reply out of order, stay silent, nudge, announce `ready`, and be
unplugged (its side of the pty closed). It is test-only; the real firmware in
serial mode is `soulstack body sim --serial`.
"""

import os
import random
import select
import threading
import time
import tty

from soulstack.firmware.core import serial_frames

POLL_S = 0.05  # how often the reader thread looks whether the cable was pulled

BOOT_NOISE = (
    b"ESP-ROM:esp32s3-20210327\r\n"
    b"rst:0x1 (POWERON),boot:0x8 (SPI_FAST_FLASH_BOOT)\r\n"
    b"I (312) cpu_start: Starting scheduler on APP CPU.\r\n"
    b"MicroPython v1.24.0 on 2024-10-25; M5STACK CoreS3 with ESP32S3\r\n"
    b'Type "help()" for more information.\r\n'
    b">>> \r\n"
    b"@ss1 {broken json\r\n"  # a frame cut short by the reset
    b'@ss1 {"id": 99999, "status": 200, "body": {}}\r\n'  # a reply from before the reset
    b"@ss1 [1, 2, 3]\r\n"
    b'@ss1 {"id": [1], "status": "ok"}\r\n'  # a frame of the right kind with nonsense inside
)


def default_answer(endpoint: str, body: dict) -> tuple[int, dict]:
    """What a healthy body answers; /look echoes the question so tests can match replies to requests."""
    if endpoint == "status":
        return 200, {"online": True}
    if endpoint == "look":
        return 200, {"text": f"I see the answer to: {body.get('question', '')}"}
    if endpoint in ("speak", "express"):
        return 200, {}
    return 404, {"message": f"no /{endpoint}"}


class FakeSerialDevice:
    """Start it, point the code under test at `.path`, and `unplug()` it to pull the cable."""

    def __init__(self, answer=default_answer, boot_noise: bool = True, silent: bool = False, max_delay_s: float = 0.0):
        self.answer = answer
        self.silent = silent  # answers nothing at all (a hung device, or one not running our firmware)
        self.max_delay_s = max_delay_s  # each reply waits a random time up to this: replies come out of order
        self.requests: list[dict] = []
        self.noise_received: list[bytes] = []
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line editing: bytes pass as on a USB CDC port
        self.path = os.ttyname(self._slave)
        self._write_lock = threading.Lock()
        self._plugged = True
        self._reader = threading.Thread(target=self._read, daemon=True, name="fake-device")
        self._reader.start()
        if boot_noise:
            self.write_raw(BOOT_NOISE)

    # --- what the device sends -------------------------------------------------

    def write_raw(self, data: bytes):
        with self._write_lock:
            if self._plugged:
                os.write(self._master, data)

    def send(self, frame: dict):
        self.write_raw(serial_frames.encode(frame).encode("utf-8"))

    def send_nudge(self, reason: str):
        self.send({"nudge": reason})

    def send_ready(self, ip: str | None, wifi: str = "connected", hal: str = "fake"):
        self.send({"ready": {"ip": ip, "wifi": wifi, "version": "0.1.0", "hal": hal}})

    def reboot_noise(self):
        """What a reset prints: the ROM banner, MicroPython's banner, a REPL prompt."""
        self.write_raw(BOOT_NOISE)

    # --- the cable ---------------------------------------------------------------

    def unplug(self):
        """Pull the cable: close the device's end of the pty; the host's reads and writes start failing.

        The reader thread is stopped first: a read still blocked on the master would keep the pty
        open in the kernel after close(), and a host that only reads would never see the hangup."""
        with self._write_lock:
            if not self._plugged:
                return
            self._plugged = False
        if self._reader is not threading.current_thread():
            self._reader.join(2 * POLL_S + 1)
        with self._write_lock:
            os.close(self._master)
            os.close(self._slave)

    close = unplug

    # --- what the device hears ---------------------------------------------------

    def _read(self):
        buffer = b""
        while self._plugged:
            try:
                ready, _, _ = select.select([self._master], [], [], POLL_S)  # so unplug() can stop it
                if not ready:
                    continue
                chunk = os.read(self._master, 65536)
            except OSError:
                return
            if not chunk:
                return
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                frame = serial_frames.decode(line)
                if frame is None or "ep" not in frame or "id" not in frame:
                    self.noise_received.append(line)
                    continue
                self.requests.append(frame)
                if not self.silent:
                    self._reply_later(frame)

    def _reply_later(self, frame: dict):
        def reply():
            if self.max_delay_s:
                time.sleep(random.uniform(0, self.max_delay_s))
            status, body = self.answer(frame["ep"], frame.get("body") or {})
            self.send({"id": frame["id"], "status": status, "body": body})

        if self.max_delay_s:
            threading.Thread(target=reply, daemon=True).start()
        else:
            reply()


class FakeEspRom:
    """The ROM bootloader of a *classic ESP32* on a pty, enough for esptool to find out what chip it is.

    It answers esptool's SLIP packets the way the ROM does: SYNC with the eight
    replies, GET_SECURITY_INFO with a failure (classic ESP32s lack it), and
    READ_REG of the chip-detect register with the ESP32's magic value — so
    `esptool --chip esp32s3` stops with its own "This chip is ESP32, not
    ESP32-S3" message, as it would with the wrong board on the cable.
    """

    SYNC, READ_REG, GET_SECURITY_INFO = 0x08, 0x0A, 0x14
    CHIP_DETECT_MAGIC_REG = 0x40001000
    ESP32_MAGIC = 0x00F01D83

    def __init__(self):
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.path = os.ttyname(self._slave)
        self.commands: list[int] = []
        self._open = True
        threading.Thread(target=self._serve, daemon=True, name="fake-esp-rom").start()

    def close(self):
        if self._open:
            self._open = False
            os.close(self._master)
            os.close(self._slave)

    @staticmethod
    def _slip(packet: bytes) -> bytes:
        return b"\xc0" + packet.replace(b"\xdb", b"\xdb\xdd").replace(b"\xc0", b"\xdb\xdc") + b"\xc0"

    def _reply(self, op: int, value: int = 0x12345678, status: bytes = b"\x00\x00"):
        import struct

        os.write(self._master, self._slip(struct.pack("<BBHI", 0x01, op, len(status), value) + status))

    def _serve(self):
        import struct

        buffer = b""
        while self._open:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:
                return
            buffer += chunk
            while buffer.count(b"\xc0") >= 2:
                start = buffer.index(b"\xc0")
                end = buffer.index(b"\xc0", start + 1)
                packet, buffer = buffer[start + 1 : end], buffer[end:]
                if not packet:
                    continue  # two delimiters in a row: the end of one frame is the start of the next
                buffer = buffer[1:]
                packet = packet.replace(b"\xdb\xdc", b"\xc0").replace(b"\xdb\xdd", b"\xdb")
                if len(packet) < 8 or packet[0] != 0x00:
                    continue
                op = packet[1]
                self.commands.append(op)
                if op == self.SYNC:
                    for _ in range(8):
                        self._reply(op)
                elif op == self.READ_REG and struct.unpack("<I", packet[8:12])[0] == self.CHIP_DETECT_MAGIC_REG:
                    self._reply(op, self.ESP32_MAGIC)
                else:
                    self._reply(op, 0, b"\x01\x05")  # failed: "invalid message", as the ROM says
