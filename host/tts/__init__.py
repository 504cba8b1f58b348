"""`soulstack tts`: text in, 16 kHz mono WAV out, for bodies that cannot speak on their own."""

# Here, not in voices.py, so that the command line names them without loading a voice's libraries.
DEFAULT_VOICE = "piper:en_US-joe-medium"
VOICE_KINDS = "piper:NAME|PATH, wyoming:tcp://HOST:PORT or espeak[:VOICE]"
