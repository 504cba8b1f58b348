"""`soulstack ears`: speech from a body's microphone to the soul's words, and the answer back to that body.

server.py receives utterance streams (docs/ears.md, "The stream"), recognise.py
turns them into text (pocketsphinx offline, or any OpenAI-compatible
transcription server), soul.py hands the words to the soul through converse and
sends each sentence of the answer to the body's /speak as it arrives.
"""
