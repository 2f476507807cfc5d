"""One module per test runner, each turning its output into an Outcome (see `outcomes.parse_outcome`)."""
