"""Protocol-true fakes, shipped: scripted model servers and bodies on loopback.

The Anthropic Messages API (and Bedrock's), the OpenAI Chat Completions API, a
recording Body Protocol body and a xiaozhi robot and server, each answering
from a script and recording every request. They let a person try soulstack
without a key (`python -m soulstack.fakes.run_fake_anthropic`,
docs/try-with-a-fake-model.md, docs/try-the-flock-offline.md), and the
benchmarks (tools/bench-*) and tests share them. Nothing in the product
imports them.
"""
