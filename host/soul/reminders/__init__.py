"""Reminders: promises of a time that keep themselves (docs/soul.md, "Reminders").

  when.py      reading a time the soul gives (a local date-time or a duration) and saying one back
  store.py     REMINDERS.json in soulDir: the pending reminders and the delivered/missed counts
  schedule.py  the rules of time: repeats rolling forward, retry backoff, when a reminder is missed
  delivery.py  the part a soul carries (`soul.reminders`): what is due at a waking, what its speak
               said, the brainstem's fixed sentence, retries while it sleeps, /health's counts

The tools that set, list and cancel them are host/soul/tools/reminders.py.
"""
