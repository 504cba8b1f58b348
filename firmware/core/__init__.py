# Pure firmware logic: no hardware imports, runs unchanged on CPython and MicroPython.
