"""Bodies that adapt something else to Body Protocol v1 (`soulstack.adapters`): terminal/ is the terminal body."""
