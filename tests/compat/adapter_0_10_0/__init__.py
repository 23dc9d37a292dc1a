"""Runs with-line-profiler 0.10.0's own test files against 0.11.0: tests/compat/test_0_10_0_suite.py."""
