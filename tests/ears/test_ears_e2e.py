"""The robot hears you, end to end with real parts (tests/ears/helpers.py's Rig): a tap, speech in the
room, the firmware streams it, pocketsphinx makes out the words, the soul answers, the robot speaks."""

from tests.ears.helpers import Rig, answer_then_sleep, speech_wav
from tests.helpers import until


async def test_touch_to_talk_reaches_the_soul_and_the_answer_plays(tmp_path):
    async with Rig(tmp_path) as rig:
        rig.fake.reply(answer_then_sleep())
        rig.robot.touch()
        live = await rig.shows("mic: live")
        rig.robot.touch(down=False)
        rig.robot.play_into_room(speech_wav())
        off = await rig.shows("mic: off", after=live)
        await until(lambda: any("time is it" in said for said in rig.heard_by_soul()), "the words to reach the soul")
        said = await rig.shows('says: "It is three', after=off)
        assert "face: thinking" in rig.screen[off:said]
        await until(lambda: rig.played_until(), "the answer to play", timeout=20)
        assert not any("error" in line for line in rig.screen), rig.screen
