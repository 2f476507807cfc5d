"""shiftgit: handoffs a fresh process can verify instead of trust.

Kept import-free: git hooks start here and must not pay for what they do not use.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
