# Runs before main.py on the device. A mistake here can stop the board from reaching the REPL,
# so all it does is let the loader count a boot of a firmware set on trial (slots.py: after
# slots.TRIES boots that never served, it switches back to the previous set) and never raise.
import gc

try:
    import slots

    slots.boot()
except Exception as problem:  # the board must still reach main.py and the REPL
    print("[soulstack] boot.py:", problem)
gc.collect()
