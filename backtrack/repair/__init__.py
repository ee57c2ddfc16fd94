"""Repairs: the search for the cheapest edit after which a draft fits, and its notations."""
