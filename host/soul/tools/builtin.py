"""The soul's built-in tools, in the order the model sees them: `make_toolbox` is what build_soul asks.

A new tool goes in its module's list (sleep, body, inner, mind, reminders, shell, flock), with its facts on
its SoulTool (host/soul/tools/__init__.py); a new module of tools is added to `make_tools` here.
"""

from soulstack.protocol.shapes import ENDPOINTS
from soulstack.soul.tools import Toolbox
from soulstack.soul.tools.body import body_tools
from soulstack.soul.tools.flock import flock_tools
from soulstack.soul.tools.inner import inner_tools
from soulstack.soul.tools.mind import mind_tools
from soulstack.soul.tools.recall import recall_tools
from soulstack.soul.tools.reminders import reminder_tools
from soulstack.soul.tools.shell import shell_tools
from soulstack.soul.tools.sleep import sleep_tools

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from soulstack.soul.config import SoulConfig


def make_tools(cfg: "SoulConfig") -> list:
    """The built-in tools this config offers."""
    tools = sleep_tools() + body_tools(cfg.body.endpoints.urls()) + inner_tools() + mind_tools() + reminder_tools()
    tools += recall_tools()  # the whole past, searchable (host/soul/tools/recall.py)
    if cfg.shell.enabled:
        tools += shell_tools(cfg)  # fenced by shell.allow
    return tools + flock_tools(cfg)  # none unless the config names the flock


def make_toolbox(cfg: "SoulConfig", extra_tools=(), sources=()) -> Toolbox:
    """The toolbox: this config's tools (then `extra_tools`, then what `sources` add); the body's tools
    it does not offer are known all the same, so their calls in the history keep their facts."""
    return Toolbox(make_tools(cfg) + list(extra_tools), sources, known=body_tools(dict.fromkeys(ENDPOINTS, True)))
