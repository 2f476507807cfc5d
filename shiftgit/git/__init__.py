"""Git: notes, the note format, hook entry points and installation, the gate, sync, the record."""
