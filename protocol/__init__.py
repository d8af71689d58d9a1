"""Cohort's pure core: group coordination as a deterministic state machine (no I/O, no clock)."""
