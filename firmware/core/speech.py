"""The bounded queue of utterances waiting to be spoken.

/speak answers as soon as its text is queued (the soul waits at most 60 s and
playback may take longer); when the queue is full it answers 503, honestly.
"""

from .protocol import Busy


class SpeechQueue:
    def __init__(self, limit=3):
        self.limit = limit
        self.items = []
        self.speaking = None

    def put(self, text):
        if len(self.items) >= self.limit:
            raise Busy("still speaking: " + str(len(self.items)) + " utterances are already waiting; try again shortly")
        self.items.append(text)

    def take(self):
        """The next text to speak, or None; marks it as being spoken."""
        self.speaking = self.items.pop(0) if self.items else None
        return self.speaking

    def drop(self):
        """Forget what is still waiting (a tap cut the robot off); the one being spoken stops by itself."""
        dropped = self.items
        self.items = []
        return dropped

    def finished(self):
        self.speaking = None

    def busy(self):
        return bool(self.items) or self.speaking is not None
