"""Real-CLI tests (run with `python -m pytest -m agents_real tests/agents_real`); see conftest.py."""
