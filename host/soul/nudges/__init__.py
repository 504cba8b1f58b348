"""The nudges the soul keeps: inbox.py holds each on disk (NUDGES.jsonl) until the waking whose
snapshot showed it has ended; ids.py keeps the nudge ids it answered (NUDGE_IDS.json), so a nudge sent again is counted once."""
