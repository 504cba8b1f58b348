"""Memory: what the model is sent of the soul's history, and how that history stays small.

  session.py      session.jsonl, every message the moment it exists (folds and consolidations are
                  records in it too); after a fold the past it let go moves into the archive
  archive.py      archive.sqlite3: the moved records, and the entries `recall` searches (FTS5)
  words.py        how the search cuts words, stored and asked alike (Chinese in pairs)
  diary.py        DIARY.md keeps a bounded recent part; its old lines move into the archive (kill -9 safe)
  heard.py        hooks keeping a person's words and the soul's spoken ones the moment they arrive
  view.py         `view(soul)`: the history as every request shows it (earlier images as placeholders,
                  earlier wakings' calls settled, the last fold's summary in front); the turn, keep-warm
                  and the ceiling all read this one function
  settle.py       the calls that ended an earlier waking, one line each (part of the view)
  fold.py         the estimate, where a cut may fall, the fold itself, the plain digest
  ceiling.py      `Ceiling`: fold when the view passes model.maxContextTokens (a before_turn hook),
                  its scale set by the provider's own token counts (an on_usage hook)
  consolidate.py  `Nightly`: once a night the waking becomes a consolidation turn, then the day is folded
  keepwarm.py     `KeepWarm`: asked by the sleep (host/soul/sleep.py) when the prompt cache needs a refresh

Nothing here imports the loop, the turn, converse or the metabolism (pyproject.toml's contracts):
the loop runs every turn, the consolidation's too, between `Nightly.begin` and `Nightly.end`.
"""
