"""Corpora of drafts with slips, shared by the benchmarks and the tests."""
