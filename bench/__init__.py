"""Benchmarks against peers, run by ``make bench``; never part of the test suite."""
