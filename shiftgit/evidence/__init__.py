"""Evidence: run a command, parse its outcome (one parser per test runner)."""
