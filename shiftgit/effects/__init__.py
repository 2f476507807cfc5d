"""Effects outside the work tree: keyed effect runs, approvals, services, reconcile, liveness."""
