"""A double of upstream MicroPython's `network` on the ESP32 port: WLAN in station mode.

From the MicroPython docs, library/network.WLAN.rst: WLAN(interface_id),
active([is_active]), connect(ssid=None, key=None, *, bssid=None),
disconnect(), isconnected(), status([param]), ifconfig(). The status codes
are the ESP32 port's (ports/esp32/modnetwork_globals.h): STAT_IDLE 1000,
STAT_CONNECTING 1001, STAT_GOT_IP 1010, and ESP-IDF's reasons for failing —
STAT_BEACON_TIMEOUT 200, STAT_NO_AP_FOUND 201, STAT_WRONG_PASSWORD 202,
STAT_ASSOC_FAIL 203, STAT_HANDSHAKE_TIMEOUT 204; STAT_CONNECT_FAIL is 203 too
since v1.25 (commit beabef5, "Add missing network.STAT_CONNECT_FAIL").
connect() on an interface that is not active raises OSError, as
esp_wifi_connect's "Wifi Not Started" does.

How the port reports a join (ports/esp32/network_wlan.c, network_wlan_status;
the same in v1.25.0 to v1.28.0, which UIFlow2 builds on): STAT_NO_AP_FOUND and
STAT_WRONG_PASSWORD (also ESP-IDF's CONNECTION_FAIL) as soon as ESP-IDF
reports them, although the port goes on retrying; any other failure shows as
STAT_CONNECTING while it retries (by default for ever), and is passed through
only once its `reconnects` are spent.

World file `wifi`: up (the default) joins about 0.3 s after connect();
down drops the link (beacon timeout) and the port reconnects by itself
once it is up again; no_ap, wrong_password, handshake_timeout fail (the last
as a port whose retries are spent reports it); flaky fails the first attempt
and joins on a retry: status() passes STAT_HANDSHAKE_TIMEOUT through for
FLAKY_POLLS looks, then says STAT_CONNECTING for as many, then joins (counted
in looks at the status, not in time, so a test of it does not hang on a busy
machine's timing).

Every status() is journaled ("WLAN.status" with what it answered): a test
counts how long the firmware kept looking before it gave up.
"""

import time

import _double

STA_IF, AP_IF = 0, 1
STAT_IDLE, STAT_CONNECTING, STAT_GOT_IP = 1000, 1001, 1010
STAT_BEACON_TIMEOUT, STAT_NO_AP_FOUND, STAT_WRONG_PASSWORD = 200, 201, 202
STAT_ASSOC_FAIL, STAT_HANDSHAKE_TIMEOUT = 203, 204
STAT_CONNECT_FAIL = STAT_ASSOC_FAIL
FAILURES = {
    "down": STAT_BEACON_TIMEOUT,
    "no_ap": STAT_NO_AP_FOUND,
    "wrong_password": STAT_WRONG_PASSWORD,
    "handshake_timeout": STAT_HANDSHAKE_TIMEOUT,
}
JOIN_MS = 300
FLAKY_POLLS = 3


class WLAN:
    IF_STA, IF_AP = STA_IF, AP_IF

    def __init__(self, *args, **kwargs):
        parsed = _double.call("WLAN", args, kwargs, [("interface_id", "int", True)])
        if parsed["interface_id"] not in (STA_IF, AP_IF):
            raise ValueError("WLAN: interface_id is network.STA_IF or network.AP_IF")
        self._active = False
        self._connect_at = None  # ticks when connect() was last called; None after disconnect()
        self._looks = 0  # status looks since connect() (the flaky world counts in them)

    def active(self, *value):
        if not value:
            return self._active
        self._active = bool(value[0])
        _double.record("WLAN.active", {"is_active": self._active})

    def connect(self, *args, **kwargs):
        parsed = _double.accept(
            "WLAN.connect", args, kwargs, [("ssid", "str", False), ("key", "str", False), ("bssid", "obj", False)]
        )
        if "key" in parsed:
            parsed["key"] = "***"  # the journal never holds the Wi-Fi password
        _double.record("WLAN.connect", parsed)
        if not self._active:
            raise OSError("Wifi Not Started")
        self._connect_at = time.ticks_ms()
        self._looks = 0

    def disconnect(self):
        _double.record("WLAN.disconnect", {})
        self._connect_at = None

    def status(self, *param):
        if param:
            raise ValueError("WLAN.status(param) is not doubled: the firmware asks for the link state only")
        status = self._status()
        _double.record("WLAN.status", {"status": status})
        return status

    def _status(self):
        if not self._active or self._connect_at is None:
            return STAT_IDLE
        state = _double.world("wifi", "up")
        if state == "flaky":
            self._looks += 1
            if self._looks <= FLAKY_POLLS:
                return STAT_HANDSHAKE_TIMEOUT
            if self._looks <= 2 * FLAKY_POLLS:
                return STAT_CONNECTING
        elif state != "up":
            return FAILURES.get(state, STAT_BEACON_TIMEOUT)
        if time.ticks_diff(time.ticks_ms(), self._connect_at) < JOIN_MS:
            return STAT_CONNECTING
        return STAT_GOT_IP

    def isconnected(self):
        return self._status() == STAT_GOT_IP

    def ifconfig(self, *config):
        if config:
            raise ValueError("WLAN.ifconfig(config) is not doubled: the firmware uses DHCP")
        if self.isconnected():
            return ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")
        return ("0.0.0.0", "0.0.0.0", "0.0.0.0", "0.0.0.0")
