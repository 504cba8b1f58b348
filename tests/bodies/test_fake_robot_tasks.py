"""The fake StackChan holds the tool calls it runs in the background (ruff's RUF006 found them unheld).

asyncio keeps only a weak reference to a task: one that waits on something nothing else holds is
collected mid-call, and the robot never answers the tool call.
"""

import asyncio
import gc
import json

from soulstack.fakes.xiaozhi_robot import FakeRobot


async def test_a_tool_call_in_the_background_survives_a_collection():
    robot = FakeRobot("ws://127.0.0.1:1/unused")
    robot.vision = {"url": "http://127.0.0.1:1/vision"}
    waiting, ended = asyncio.Event(), []

    async def upload(question: str) -> str:
        try:
            waiting.set()
            await asyncio.get_running_loop().create_future()  # an upload that waits on what only it holds
        finally:
            ended.append(question)
        return ""

    robot.upload = upload
    call = {"method": "tools/call", "id": 7, "params": {"name": robot.camera_tool, "arguments": {"question": "q"}}}
    await robot._on_text(json.dumps({"type": "mcp", "payload": call}))
    await asyncio.wait_for(waiting.wait(), 5)
    gc.collect()
    await asyncio.sleep(0)
    assert ended == [], "the tool call's task was collected while it ran"
    calls = list(robot.tool_calls)
    for task in calls:
        task.cancel()
    await asyncio.gather(*calls, return_exceptions=True)
