"""`soulstack flock --demo`: the flock with a scripted mind instead of a model.

brain.py   the rules: the Sentry's triage, the crows' answers, the Elder, banter, nest replies
model.py   DemoModel: those rules behind the flock's model seam, paced so a person can watch

The page says at open that it is a demo (soulstack.flock.web.routes: /api/ui's `mind`).
"""
