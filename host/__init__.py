"""soulstack: the host side (soul, bodies, flock) as one Python package."""
