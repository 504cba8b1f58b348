"""The soul's tests: its life, memory, metabolism, converse and tools, in process and as `soulstack soul`."""
