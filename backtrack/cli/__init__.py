"""The command line: `backtrack demo`, `backtrack run`, `backtrack serve`."""
