"""`soulstack home init`: one small always-on computer (a Raspberry Pi, a spare laptop) as the robot's home.

It writes each service's environment file (fresh tokens, kept on a re-run, and `--host` the LAN address),
the soul's config, and their systemd units (through soulstack.service), then prints the exact
`tools/flash` command with the LAN URLs and tokens. `setup.py` holds the services and the steps.
"""
