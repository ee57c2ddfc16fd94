"""Lark grammars: reading, imports, templates, and writing them for llguidance."""
