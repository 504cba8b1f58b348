"""The terminal body: zero hardware, the terminal is its face and voice."""
