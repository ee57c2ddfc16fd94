"""OpenAI and Anthropic wire shapes: requests read, replies and stream events written."""
