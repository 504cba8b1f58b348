"""The soul: a life of wakings. It wakes, sees itself and its world, thinks with its tools, sleeps.

What lives where:

  run.py          build_soul: the one place a soul is wired (`attach_parts`: every part `Soul`
                  declares, every hook they hang); serve_and_live; run_soul (`soulstack soul`)
  loop.py         `Soul`: the life (wake, snapshot, turn, sleep), the ways in (`nudge`, `deliver`)
  waking.py       `Waking`, one waking's record (why it woke, what it did); `Delivery`, words waiting
  sleep.py        `Sleep`: between wakings, until something wakes it; asks keep-warm when the
                  prompt cache needs a refresh
  turn.py         one waking's turn: model step, tools, model step, ... until it sleeps
  snapshot.py     the message each waking begins with (its inner life once, then what changed)
  nudges/         the nudges kept: inbox.py (on disk, NUDGES.jsonl, until the waking that
                  showed them ends), ids.py (the ids answered: a nudge sent again is counted once)
  server.py       the one HTTP server: POST /nudge, and the routes run.py hands it
  hooks.py        the hooks the rooms hang their functions on (the loop knows none of them)
  life.py         the life files (SELF.md, DIARY.md, ...), written by atomic.py
  rhythm.py       day and night, and how long a sleep may be
  config/         soul.config.json: its table, the reader, stackchan-soul's configs, the starter
                  file; commands.py: `soulstack soul`
  memory/         what the model is sent (one view) and how the history stays small: session,
                  settle, fold, the context ceiling, the night's consolidation, keep-warm
  metabolism/     drives, vitals, costs and GET /health
  converse/       a person talking in real time through a voice stack (/v1/chat/completions)
  reminders/      promises of a time (REMINDERS.json): the sleep ends when one is due, the waking
                  says it, the brainstem too; retried asleep until said or missed
  tools/          the soul's tools, each with its facts (routine, the part it changes, its role),
                  asked through the Toolbox; builtin.py: those a config offers
  prompts/        its words, one module per language (every text it says to its model or person)

The life of a waking (`Soul.live`):

  _begin       takes the words delivered, the nudges due (inbox.take) and the reminders due
               (reminders.take_due); says why it woke
  _live_one    senses the body; on_waking hooks; the snapshot (snapshot.py) is stored in the
               session (memory/session.py), and the inbox marks its nudges shown (inbox.shown)
    once a night (Nightly.due, a quiet waking): Nightly.begin, run_turn, Nightly.end (the day folded)
    any other:  before_turn hooks (new MCP tools, the ceiling's fold), then run_turn:
                view(soul) -> model -> tools -> ... until a reply calls sleep (turn.py)
  inbox.ended  the waking is over (answered, or failed): the nudges it showed leave the inbox
  _end         one log line, the sleep planned (rhythm.py, adjust_sleep hooks)
  sleep        Sleep.until_woken (sleep.py): until the alarm, a nudge that is due, words delivered
               or a reminder's time (a retry of one not said is made on the way); each stretch
               refreshes the prompt cache when keep-warm says it would expire first

The path of a nudge:

  a body's POST /nudge -> server.nudge (protocol/nudges.py's parse_nudge; words sent alone get
  their reason, "your human typed: ...") -> Soul.nudge -> inbox.add (on NUDGES.jsonl, fsynced,
  before the 202) -> on_nudge hooks (a person's words are contact) -> the sleep wakes once the
  inbox says it is due (nudge.minIntervalSeconds; a person's words within seconds) -> _begin
  takes it -> the snapshot shows it -> the waking ends -> inbox.ended: it leaves the file.
  Whether a nudge carries a person's words is one rule, protocol/nudges.py's words_of, wherever
  it is asked.
"""
