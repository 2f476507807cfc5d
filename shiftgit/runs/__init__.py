"""A run's life: start, check, checkpoint, constraints, amend, stop, finish; status reports."""
