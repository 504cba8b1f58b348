"""The firmware's log line. On the device stdout is the USB serial line, so the log travels there."""


def log(*parts):
    print("[soulstack]", *parts)
