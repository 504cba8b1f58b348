"""The flock: a server where the Sentry triages todo lists, crows do the work,
the Elder merges, and trust grows with every approval. See docs/events.md.

Where things live:
    app.py, commands.py, config.py  the wiring: routes and lifecycle (`make_flock_app`),
                                    `soulstack flock`, flock.config.json
    demo/    `--demo`: the scripted brain behind the model seam, paced (no model thinks)
    lists/   a list's life: flow (the Flock), the Sentry's triage, the crows' banter, the read API
    nests/   rooms of crows: the registry, messages and their stream, the harness, rules, tables
    jev/     Jev, the tagger the nests ask: its two backends, its context, the tagging rule, the
             separate set's figures and band, its report; data/ its written conversations
    voice/   the flock's voice on the robot, and the told cursor that survives kill -9
    web/     the page: routes.py serves it, beside its HTML, CSS and JS modules
    rive/    the crows' Rive file, written from readable source (the page's default renderer)
    shared by the rooms: store (SQLite) with rows (lists and items as typed rows), events (the
    event log and the one SSE fan-out) with payloads (each event's name and fields, declared
    once), journal, personas (+ crows.json), trust, pranks, request_bodies

The path of a list: POST /api/lists (request_bodies) -> Flock.submit (lists/flow) -> the
Sentry's triage (lists/sentry: solo, split or murder) -> the owner's verdict unless trusted ->
crows fly (picked by nests/registry) -> the Elder merges or judges -> the answer -> the
owner's verdict unless trusted -> trust moves (trust). Each step is an event (events) that
the page and the robot's voice follow.
"""
