"""`soulstack body sim`: the real firmware, with fake hardware, on this computer."""
