"""The OpenAI and Anthropic wire shapes: requests read, drafters built, replies and stream events
written; used by wrap and by the server, and importing neither."""
