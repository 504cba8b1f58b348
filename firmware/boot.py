# Runs before main.py on the device. Kept empty of logic on purpose: a mistake
# here can stop the board from reaching the REPL. main.py does the wiring.
import gc

gc.collect()
