"""`soulstack tts`: text in, 16 kHz mono WAV out, for bodies that cannot speak on their own."""
