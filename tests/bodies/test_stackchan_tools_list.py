"""/look through the xiaozhi adapter behind a server that never lists the robot's tools (issue 47, item 8).

The adapter learns the camera tool's name from the robot's answer to a tools/list. Behind
xiaozhi-server that answer comes to the server's own tools/list; behind a server that sends none it
called the firmware's `self.camera.take_photo`, and a py-xiaozhi device (its tool is `take_photo`)
answered without a photo. Now the adapter asks the robot's tools/list itself before its first look,
with its own JSON-RPC id, whose answer never goes upstream. The robot is host/fakes/xiaozhi_robot.py
naming its tool as py-xiaozhi does; the upstream is host/fakes/xiaozhi_upstream.py.
"""

import base64
import json

import pytest

from soulstack.adapters.stackchan.session import OUR_FIRST_ID
from soulstack.fakes.xiaozhi_robot import DESK_JPEG
from tests.bodies.helpers import rig

NEVER_LISTS = {
    "sends nothing": {"send_initialize": False},  # no initialize either: the adapter sends its own
    "initializes only": {"send_tools_list": False},
}


def mcp_ids_upstream_saw(r) -> list:
    frames = [json.loads(f) for f in r.upstream.connections[0]["received"] if isinstance(f, str)]
    return [m["payload"].get("id") for m in frames if m.get("type") == "mcp"]


@pytest.mark.parametrize("upstream", NEVER_LISTS.values(), ids=NEVER_LISTS.keys())
async def test_look_asks_the_robots_tools_list_itself_and_calls_take_photo_by_its_name(upstream):
    async with rig(upstream) as r:
        robot = await r.robot(camera_tool="take_photo", frame_ms=20)  # py-xiaozhi's name and frames
        for question in ("who is at the desk?", "and now?"):
            status, answer = await r.post("look", {"question": question})
            assert status == 200 and base64.b64decode(answer.get("image", "")) == DESK_JPEG, answer
        # Asked once, before the first look, with our own id; its answer stayed between adapter and robot.
        assert len(robot.tools_lists) == 1 and robot.tools_lists[0] >= OUR_FIRST_ID, robot.tools_lists
        assert r.body.session.tools == {"self.get_device_status", "take_photo"}
        assert all(rpc_id is not None and rpc_id < OUR_FIRST_ID for rpc_id in mcp_ids_upstream_saw(r))
        assert mcp_ids_upstream_saw(r) == ([] if "send_initialize" in upstream else [1])


async def test_a_paged_tools_list_is_read_to_the_page_with_the_camera():
    async with rig({"send_tools_list": False}) as r:
        robot = await r.robot(camera_tool="take_photo", tools_page=2)  # 7 tools: the camera on the 4th page
        status, answer = await r.post("look", {"question": "what is on the desk?"})
        assert status == 200 and base64.b64decode(answer.get("image", "")) == DESK_JPEG, answer
        assert len(robot.tools_lists) == 4 and "take_photo" in r.body.session.tools
        assert mcp_ids_upstream_saw(r) == [1]


async def test_behind_a_server_that_lists_tools_the_adapter_asks_nothing_more():
    async with rig() as r:
        robot = await r.robot(camera_tool="take_photo")
        status, answer = await r.post("look", {"question": "anyone?"})
        assert status == 200 and base64.b64decode(answer.get("image", "")) == DESK_JPEG, answer
        assert robot.tools_lists == [2]  # upstream's own, relayed; none of ours
        assert mcp_ids_upstream_saw(r) == [1, 2]


async def test_a_robot_without_a_camera_behind_a_server_that_never_lists_says_so():
    async with rig({"send_tools_list": False}) as r:
        await r.robot(camera=False)
        assert await r.post("look", {"question": "hello?"}) == (
            200,
            {"text": "this robot has no camera tool (its tools/list names no take_photo)"},
        )
