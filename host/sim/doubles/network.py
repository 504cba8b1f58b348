"""A double of upstream MicroPython's `network` on the ESP32 port: WLAN in station mode.

From the MicroPython docs, library/network.WLAN.rst: WLAN(interface_id),
active([is_active]), connect(ssid=None, key=None, *, bssid=None),
disconnect(), isconnected(), status([param]), ifconfig(). The status codes
are the ESP32 port's (ports/esp32/modnetwork_globals.h): STAT_IDLE 1000,
STAT_CONNECTING 1001, STAT_GOT_IP 1010, and ESP-IDF's reasons for failing —
STAT_BEACON_TIMEOUT 200, STAT_NO_AP_FOUND 201, STAT_WRONG_PASSWORD 202,
STAT_ASSOC_FAIL 203, STAT_HANDSHAKE_TIMEOUT 204. That port has no
STAT_CONNECT_FAIL. connect() on an interface that is not active raises
OSError, as esp_wifi_connect's "Wifi Not Started" does.

World file `wifi`: up (the default) joins about 0.3 s after connect();
down drops the link (beacon timeout) and the port reconnects by itself
once it is up again; no_ap, wrong_password, handshake_timeout fail.
"""

import time

import _double

STA_IF, AP_IF = 0, 1
STAT_IDLE, STAT_CONNECTING, STAT_GOT_IP = 1000, 1001, 1010
STAT_BEACON_TIMEOUT, STAT_NO_AP_FOUND, STAT_WRONG_PASSWORD = 200, 201, 202
STAT_ASSOC_FAIL, STAT_HANDSHAKE_TIMEOUT = 203, 204
FAILURES = {
    "down": STAT_BEACON_TIMEOUT,
    "no_ap": STAT_NO_AP_FOUND,
    "wrong_password": STAT_WRONG_PASSWORD,
    "handshake_timeout": STAT_HANDSHAKE_TIMEOUT,
}
JOIN_MS = 300


class WLAN:
    IF_STA, IF_AP = STA_IF, AP_IF

    def __init__(self, *args, **kwargs):
        parsed = _double.call("WLAN", args, kwargs, [("interface_id", "int", True)])
        if parsed["interface_id"] not in (STA_IF, AP_IF):
            raise ValueError("WLAN: interface_id is network.STA_IF or network.AP_IF")
        self._active = False
        self._connect_at = None  # ticks when connect() was last called; None after disconnect()

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

    def disconnect(self):
        _double.record("WLAN.disconnect", {})
        self._connect_at = None

    def status(self, *param):
        if param:
            raise ValueError("WLAN.status(param) is not doubled: the firmware asks for the link state only")
        if not self._active or self._connect_at is None:
            return STAT_IDLE
        state = _double.world("wifi", "up")
        if state != "up":
            return FAILURES.get(state, STAT_BEACON_TIMEOUT)
        if time.ticks_diff(time.ticks_ms(), self._connect_at) < JOIN_MS:
            return STAT_CONNECTING
        return STAT_GOT_IP

    def isconnected(self):
        return self.status() == STAT_GOT_IP

    def ifconfig(self, *config):
        if config:
            raise ValueError("WLAN.ifconfig(config) is not doubled: the firmware uses DHCP")
        if self.isconnected():
            return ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")
        return ("0.0.0.0", "0.0.0.0", "0.0.0.0", "0.0.0.0")
