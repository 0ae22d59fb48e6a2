"""Stand-in package (truffld tests)."""
