"""JSON schemas: the grammar built from one, its relaxations and its semantic checks."""
