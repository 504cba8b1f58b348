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


def _final_wifi_codes(network):
    """The status codes that end a join at once (`Esp32Hal.wifi_failed`), those this port has."""
    names = (
        "STAT_WRONG_PASSWORD",
        "STAT_NO_AP_FOUND",
        # ESP-IDF 5.2's kinds of "no such network", reported by status() as STAT_NO_AP_FOUND is
        "STAT_NO_AP_FOUND_IN_RSSI_THRESHOLD",
        "STAT_NO_AP_FOUND_IN_AUTHMODE_THRESHOLD",
        "STAT_NO_AP_FOUND_W_COMPATIBLE_SECURITY",
    )
    return [getattr(network, name) for name in names if hasattr(network, name)]


class Esp32Hal:
    name = "generic"
    camera_expected = False

    def __init__(self, config):
        self.config = config
        self.clock = system_clock()
        self.servos = Servos(config["servo"]) if config["servo"]["kind"] != "none" else None
        self.wlan = None
        self.wifi_before = None  # the status before the last connect(), and whether it changed since
        self.wifi_moved = False
        self.wdt = None
        self.wdt_ms = 0  # a watchdog to start once the loader lets us (watchdog_start)

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
        # The port keeps the last join's failure until an IP comes (network_wlan.c: wifi_sta_disconn_reason
        # outlives connect()), so the same code seen right after this connect() may be the old one.
        self.wifi_before = self.wlan.status()
        self.wifi_moved = False
        self.wlan.connect(ssid, password)

    def wifi_failed(self):
        """True once this join has failed in a way the port reports as final: a wrong password or no such
        network (status() says STAT_WRONG_PASSWORD or STAT_NO_AP_FOUND). The body stops waiting then.

        MicroPython's ESP32 port (ports/esp32/network_wlan.c, since v1.22: PR #12932) returns those two the
        moment ESP-IDF reports them; every other failure (a handshake or beacon timeout, an association
        refused) it retries by itself and shows as STAT_CONNECTING until its retries are spent (never, by
        default), so no other code ends the wait. The port goes on retrying behind a final code too (a
        refused password can be a fluke: PR #4842), and the body's next look at the link sees it joined.
        """
        import network

        if self.wlan is None:
            return False
        status = self.wlan.status()
        if status not in _final_wifi_codes(network):
            self.wifi_moved = True  # the port is past the old code: a final one from now on is this join's
            return False
        return self.wifi_moved or status != self.wifi_before

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
    # On a trial boot the loader (slots.py) has started the same watchdog (ESP32: one task watchdog, whose next WDT()
    # only sets a new timeout) and nothing may feed it until the new set serves: ours waits until then.

    def watchdog_start(self, timeout_ms):
        self.wdt_ms = timeout_ms
        self._watchdog_when_free()

    def _watchdog_when_free(self):
        if _loader_watching():
            return
        timeout_ms, self.wdt_ms = self.wdt_ms, 0
        try:
            from machine import WDT

            self.wdt = WDT(timeout=timeout_ms)
        except (ImportError, ValueError, OSError):
            self.wdt = None

    def watchdog_feed(self):
        if self.wdt_ms:
            self._watchdog_when_free()
        if self.wdt:
            self.wdt.feed()


def _loader_watching():
    """True while the loader's trial watchdog waits for this set to serve (slots.watching; older loaders have none)."""
    try:
        import slots
    except ImportError:
        return False
    watching = getattr(slots, "watching", None)
    return bool(watching and watching())
