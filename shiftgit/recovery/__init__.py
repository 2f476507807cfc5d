"""Recovery: verify, resume, briefing, rollback, trust, freshness."""
