"""The HTTP server: OpenAI- and Anthropic-shaped endpoints whose answers follow a grammar."""
