"""The metabolism: what a life costs and what the soul feels of it.

  metabolism.py   `Metabolism`: drives and vitals hung on the soul's hooks (counts wakings, prices
                  model calls, feels boredom and hunger, stretches a starving soul's sleep)
  drives.py       boredom and missing the human (DRIVES.json)
  vitals.py       the day's wakings and spending, hunger against budget.* (VITALS.json)
  costs.py        prices and the token/$ meter
  health.py       GET /health: the vital signs and alarms for a person to read

Nothing here imports the loop, the turn, memory or converse (pyproject.toml's contracts).
"""
