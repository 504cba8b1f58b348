"""A double of upstream MicroPython's `machine` as the ESP32-S3 port has it: UART, PWM, Pin, WDT.

From the MicroPython docs, library/machine.UART.rst (UART(id, ...), init's
baudrate/bits/parity/stop and keyword-only tx/rx/...; write(buf) returns the
bytes written), machine.PWM.rst (PWM(dest, *, freq, duty_u16, duty_ns,
invert); duty_ns([value])), machine.Pin.rst (Pin(id, mode=-1, pull=-1, *,
value, drive, alt)), machine.WDT.rst (WDT(id=0, timeout=5000); feed(); it cannot be stopped), machine.rst's reset() (both in _board.py), and
esp32/quickref.rst for the port's ranges (three UARTs, PWM 1 Hz..40 MHz,
GPIO 0..21 and 26..48 on the S3). UART writes are journalled as hex, so a
test can check every SCS0009 packet.
"""

import binascii

import _double
from _board import WDT, reset  # noqa: F401  (the board's own: shared with the fake HAL's board)


def _gpio(number, what):
    if not (0 <= number <= 21 or 26 <= number <= 48):
        raise ValueError(what + ": GPIO" + str(number) + " does not exist on the ESP32-S3")


class Pin:
    IN, OUT, OPEN_DRAIN = 1, 3, 7
    PULL_UP, PULL_DOWN = 2, 1

    def __init__(self, *args, **kwargs):
        spec = [
            ("id", "int", True),
            ("mode", "int", False),
            ("pull", "int", False),
            ("value", "obj", False),
            ("drive", "int", False),
            ("alt", "int", False),
        ]
        parsed = _double.call("Pin", args, kwargs, spec)
        _gpio(parsed["id"], "Pin")
        self.id = parsed["id"]


class UART:
    _INIT = [
        ("baudrate", "int", False),
        ("bits", "int", False),
        ("parity", "obj", False),
        ("stop", "int", False),
        ("tx", "int", False),
        ("rx", "int", False),
        ("rts", "int", False),
        ("cts", "int", False),
        ("txbuf", "int", False),
        ("rxbuf", "int", False),
        ("timeout", "int", False),
        ("timeout_char", "int", False),
        ("invert", "int", False),
        ("flow", "int", False),
    ]

    def __init__(self, uart_id, *args, **kwargs):
        if not isinstance(uart_id, int) or not 0 <= uart_id <= 2:
            raise ValueError("UART(" + repr(uart_id) + ") does not exist (the ESP32-S3 has UART 0, 1 and 2)")
        if args:  # init's parameters after baudrate are keyword-only: UART(1, 9600, 8) is the most positional allowed
            if len(args) > 3:
                raise TypeError("UART() takes at most 4 positional arguments")
        parsed = _double.accept("UART", args, kwargs, self._INIT)
        for pin in ("tx", "rx"):
            if pin in parsed:
                _gpio(parsed[pin], "UART " + pin)
        baud = parsed.get("baudrate", 115200)
        if not 300 <= baud <= 5000000:
            raise ValueError("UART baudrate " + str(baud) + " is out of range")
        parsed["id"] = uart_id
        _double.record("UART", parsed)
        self.id = uart_id

    def write(self, buf):
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError("object with buffer protocol required")
        _double.record("UART.write", {"id": self.id, "hex": binascii.hexlify(bytes(buf)).decode()})
        return len(buf)

    def read(self, nbytes=-1):
        return None  # no servo answers: the firmware never reads them

    def any(self):
        return 0


class PWM:
    def __init__(self, dest, **kwargs):
        if not isinstance(dest, Pin):
            raise TypeError("PWM: dest must be a machine.Pin")
        spec = [("freq", "int", False), ("duty_u16", "int", False), ("duty_ns", "int", False), ("invert", "int", False)]
        parsed = _double.accept("PWM", (), kwargs, spec)
        freq = parsed.get("freq", 5000)
        if not 1 <= freq <= 40000000:
            raise ValueError("PWM frequency " + str(freq) + " Hz is out of range (1 Hz..40 MHz)")
        parsed["pin"] = dest.id
        _double.record("PWM", parsed)
        self.pin = dest.id
        self._freq = freq
        self._duty_ns = parsed.get("duty_ns", 0)

    def freq(self, *value):
        if not value:
            return self._freq
        self._freq = value[0]

    def duty_ns(self, *value):
        if not value:
            return self._duty_ns
        if len(value) > 1 or not isinstance(value[0], int):
            raise TypeError("duty_ns takes one int")
        period_ns = 1000000000 // self._freq
        if not 0 <= value[0] <= period_ns:
            raise ValueError("duty_ns " + str(value[0]) + " is outside the period (0.." + str(period_ns) + " ns)")
        self._duty_ns = value[0]
        _double.record("PWM.duty_ns", {"pin": self.pin, "ns": value[0]})

    def deinit(self):
        _double.record("PWM.deinit", {"pin": self.pin})
