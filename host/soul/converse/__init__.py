"""Converse: a person talking with the soul in real time, through a voice stack's OpenAI-style chat call.

  endpoint.py     POST /v1/chat/completions and GET /v1/models: OpenAI's shapes and error shape, a hang-up
                  seen at once (`add_routes` mounts it on the soul's server)
  answers.py      `Converse`: one answer per utterance (re-deliveries share it), the filler line, an answer
                  cut off (told to the soul, never handed back: a re-delivery is heard afresh); the `Listener` seam
  listener.py     `SoulListener`: the soul at the endpoint's `Listener` seam (words in by `soul.deliver`,
                  the answer caught through five hooks that build_soul hangs on the soul)
  reply.py        the human's words out of a chat body; `ReplyCatcher`s that find the answer among what
                  the soul's model writes
  first_words.py  the spoken part of a text (inner monologue removed), released sentence by sentence
  echo.py         the echo guard: the robot's own voice heard back is no person's words (thresholds there)
  shapes.py       OpenAI's response shapes, with an estimated `usage`

Nothing here imports the soul's loop, its memory or its metabolism (pyproject.toml's contracts).
"""
