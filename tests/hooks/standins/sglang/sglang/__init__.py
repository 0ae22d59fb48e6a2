"""Stand-in for the sglang package (truffld tests)."""
