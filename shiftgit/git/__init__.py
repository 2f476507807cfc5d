"""Git: notes, the note format, hook entry points and installation, the gate, sync, the record."""

# The git hooks `shiftgit hook NAME` answers (dispatched in __main__ before click loads, and before the agent
# hooks' table: a commit's hooks import nothing they do not use).
GIT_HOOKS = ("pre-commit", "commit-msg", "post-commit", "post-rewrite", "post-merge", "pre-push")
