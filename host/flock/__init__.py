"""The flock: a server where the Sentry triages todo lists, crows do the work,
the Elder merges, and trust grows with every approval. See docs/events.md."""
