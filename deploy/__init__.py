"""The systemd units, shipped inside the soulstack package.

`soulstack service install NAME` reads `soulstack-NAME.service` from here, points
its ExecStart at the soulstack that runs it, writes it and enables it. The
files name /opt/soulstack/bin/soulstack, where docs/deploy.md installs it.
"""

from pathlib import Path

DEPLOY_DIR = Path(__file__).resolve().parent
