"""Evaluation: reports, probes and benchmarks on frozen representations."""
