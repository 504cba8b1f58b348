"""Nests: rooms where a team of crows talks (docs/events.md).

registry.py  the nests (SQLite, mirrored to nests.json) and how their crows are picked
messages.py  what a posted message may carry; the log that numbers, stores and streams it
harness.py   every posted message: Jev's tag, the Sentry's flags, expectations, at most
             one crow's turn; it asks the flock only through FlockForNests
rules.py     what needs no model: members, breaches, reading a crow's reply, its prompt
store.py     the nests' tables in the flock's SQLite (messages, expectations, quarantine)
"""
