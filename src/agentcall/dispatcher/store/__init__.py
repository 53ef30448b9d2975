"""SQLite state of the Dispatcher: one connection, one writer thread, numbered migrations."""
