"""The one seam to language models, shared by the soul and the flock."""
