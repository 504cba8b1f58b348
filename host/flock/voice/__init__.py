"""The flock's voice on the robot (docs/flock-and-soul.md).

robot.py     hears every event and tells a person: through a body (BodyVoice) or, when a
             soul lives in it, through the soul's nudges (SoulVoice)
told.py      the cursor of what a voice has told, in the flock's store: kill -9 neither
             repeats a line nor loses one
"""
