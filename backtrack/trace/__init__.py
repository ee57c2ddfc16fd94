"""What a run did: its trace, spans, result and HTML rendering."""
