"""Protocol-true fakes: real loopback servers that tests point real clients at."""
