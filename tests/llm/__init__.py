"""The model seam's tests: the Anthropic, OpenAI-compatible and Bedrock providers, streaming, prices, the
brainstem (a rhythm with no model), and the fake Messages API run as its own process."""
