"""Bodies that adapt something else (a terminal, a xiaozhi device) to Body Protocol v1."""
