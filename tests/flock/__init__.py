"""The flock's tests: its lists, nests, Jev, voice and page, in process and as `soulstack flock`."""
