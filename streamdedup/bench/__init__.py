"""Benchmarks and accuracy harnesses (scripts that print figures; not timed tests)."""
