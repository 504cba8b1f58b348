"""`soulstack flash` (= tools/flash): from a blank or stock CoreS3 to an online, checked body.

Steps: find the port, optionally write MicroPython with esptool, upload
firmware/ and microdot with mpremote, write config.json, restart, wait for the
robot's `ready` frame over serial, run body-check, print the soul's `body`
section. `plan.py` holds the steps; `--dry-run` prints them and touches nothing.
"""
