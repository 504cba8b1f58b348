"""The disk, for every feature: its faults named (storage.py: a full, read-only or failing disk, a
database that cannot write) and one process per folder (folder_lock.py: a kernel lock)."""
