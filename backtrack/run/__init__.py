"""The run: options, the loop over rounds, reading a draft, and the driver of its effects."""
