"""Cohort's runtime: Ray actors, the log, the CLI. Everything that waits, sleeps or writes."""
