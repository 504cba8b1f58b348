"""A list's life (docs/events.md).

flow.py      the Flock: each item queued -> triaged -> verdict -> crows flying -> the Elder
             -> answered -> verdict, every step saved so a restart knows where it stood;
             also what the nests' harness may ask of the flock (nests/harness.FlockForNests)
approvals.py the verdicts a person still owes, always answerable while the store lists them
sentry.py    the Sentry's triage call (solo, split or murder; `abuse` costs a strike)
banter.py    the one-line asides between crows who worked on the same item
read_api.py  GET /api/lists and /api/lists/{id}: every list, its items' answers and verdicts,
             read from the store so they outlive a restart (docs/flock-api.md)
"""
