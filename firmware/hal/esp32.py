"""What every ESP32-S3 build has: Wi-Fi, servos on UART or PWM, a watchdog.

Both real HALs (uiflow, generic) build on this; the senses that need the
CoreS3's own drivers (screen, camera, speaker, IMU, touch) are "unavailable"
here and the uiflow HAL fills them in. Unavailable is said in words, so
/status and /look can be honest about it.
"""

import struct

from core.clock import system_clock

UNAVAILABLE = "not available on this firmware build"


class Servos:
    """SCS0009 serial-bus servos (M5Stack's StackChan) or SG90 PWM servos (DIY StackChans)."""

    def __init__(self, settings):
        self.kind = settings["kind"]
        self.settings = settings
        self.uart = None
        self.pwm = {}
        if self.kind == "scs0009":
            from machine import UART

            self.uart = UART(settings["uart"], baudrate=settings["baud"], tx=settings["tx"], rx=settings["rx"])
            self.ids = {"yaw": settings["yaw_id"], "pitch": settings["pitch_id"]}
        elif self.kind == "sg90":
            from machine import PWM, Pin

            for axis, key in (("yaw", "pan_pin"), ("pitch", "tilt_pin")):
                self.pwm[axis] = PWM(Pin(settings[key]), freq=50)

    def _scs_write(self, servo_id, address, payload):
        # Packet: FF FF id length instruction(0x03 write) address data... checksum(~sum).
        body = bytes((servo_id, len(payload) + 3, 0x03, address)) + payload
        self.uart.write(b"\xff\xff" + body + bytes(((~sum(body)) & 0xFF,)))

    def send(self, axis, degrees):
        if self.kind == "scs0009":
            # 0..1023 spans 300 degrees; 512 is the centre; SCS registers are big-endian.
            position = max(0, min(1023, int(512 + degrees * 1024 / 300)))
            self._scs_write(self.ids[axis], 0x2A, struct.pack(">HHH", position, 0, 0))
        elif self.kind == "sg90":
            self.pwm[axis].duty_ns(int(500000 + max(0, min(180, degrees)) * 2000000 / 180))

    def torque(self, on):
        if self.kind == "scs0009":
            for servo_id in self.ids.values():
                self._scs_write(servo_id, 0x28, bytes((1 if on else 0,)))
        elif self.kind == "sg90" and not on:
            for pwm in self.pwm.values():
                pwm.duty_ns(0)  # no pulses: the SG90 stops holding


class Esp32Hal:
    name = "generic"
    camera_expected = False

    def __init__(self, config):
        self.config = config
        self.clock = system_clock()
        self.servos = Servos(config["servo"]) if config["servo"]["kind"] != "none" else None
        self.wlan = None
        self.wdt = None

    def begin(self):
        pass

    def update(self):
        pass

    # --- Wi-Fi ---

    def wifi_connect(self, ssid, password):
        import network

        if self.wlan is None:
            self.wlan = network.WLAN(network.STA_IF)
            self.wlan.active(True)
        try:
            self.wlan.disconnect()
        except OSError:
            pass
        self.wlan.connect(ssid, password)

    def wifi_status(self):
        import network

        if self.wlan is None:
            return False, None, "not connected yet"
        if self.wlan.isconnected():
            return True, self.wlan.ifconfig()[0], "connected"
        status = self.wlan.status()
        # The ESP32 port reports ESP-IDF's reasons (STAT_BEACON_TIMEOUT ... STAT_HANDSHAKE_TIMEOUT) and has
        # no STAT_CONNECT_FAIL; other ports the reverse. A wrong WPA2 password often shows as a handshake timeout.
        reasons = {
            getattr(network, "STAT_WRONG_PASSWORD", -3): "wrong Wi-Fi password (check wifi.password)",
            getattr(
                network, "STAT_HANDSHAKE_TIMEOUT", -4
            ): "Wi-Fi handshake timed out (most often a wrong wifi.password)",
            getattr(network, "STAT_NO_AP_FOUND", -2): "Wi-Fi network not found (check wifi.ssid)",
            getattr(network, "STAT_BEACON_TIMEOUT", -5): "Wi-Fi signal lost",
            getattr(network, "STAT_ASSOC_FAIL", -6): "the Wi-Fi access point refused the robot",
            getattr(network, "STAT_CONNECT_FAIL", -1): "Wi-Fi connection failed",
            getattr(network, "STAT_CONNECTING", 1001): "connecting",
            getattr(network, "STAT_IDLE", 1000): "not connected",
        }
        return False, None, reasons.get(status, "Wi-Fi status " + str(status))

    # --- senses this build lacks (uiflow overrides them) ---

    def display_problem(self):
        return "no screen driver: " + UNAVAILABLE

    def draw(self, frame):
        pass

    def show_error(self, text):
        pass

    def note(self, text):
        pass  # what the body just did (a nudge sent); the log says it too, so a screen need not

    def camera_problem(self):
        return "no camera: " + UNAVAILABLE

    def snapshot_jpeg(self, quality=70):
        raise OSError("no camera")

    def detect_face(self):
        return None

    def speaker_problem(self):
        return "no speaker driver: " + UNAVAILABLE

    def play_start(self, rate, channels):
        raise OSError("no speaker")

    def play(self, pcm):
        raise OSError("no speaker")

    def play_end(self):
        pass

    def play_stop(self):
        pass

    def playing(self):
        return False

    def mic_problem(self):
        return "no microphone driver: " + UNAVAILABLE

    def mic_start(self):
        raise OSError("no microphone")

    def mic_read(self, buffer):
        return 0  # the contract: bytes copied into `buffer`; none without a microphone

    def mic_stop(self):
        pass

    def read_accel(self):
        return None

    def poll_event(self):
        return None

    # --- servos ---

    def servo_send(self, axis, degrees):
        if self.servos:
            self.servos.send(axis, degrees)

    def servo_torque(self, on):
        if self.servos:
            self.servos.torque(on)

    # --- flash ---

    def flash_free(self, path):
        """(bytes free, block size) of the filesystem holding `path` (LittleFS: whole blocks of 4 KB)."""
        import os

        stat = os.statvfs(path or "/")
        return stat[0] * stat[4], stat[0]

    # --- watchdog: reboots the board if the animation loop stops feeding it ---

    def watchdog_start(self, timeout_ms):
        try:
            from machine import WDT

            self.wdt = WDT(timeout=timeout_ms)
        except (ImportError, ValueError, OSError):
            self.wdt = None

    def watchdog_feed(self):
        if self.wdt:
            self.wdt.feed()
