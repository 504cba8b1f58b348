"""`soulstack service install NAME`: run a part of soulstack as a systemd service (units in deploy/)."""
