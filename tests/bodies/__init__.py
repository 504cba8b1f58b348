"""The bodies' tests: the Body Protocol and its nudges, the terminal body, the StackChan adapter, the serial
bridge, text-to-speech and `soulstack logs`."""
