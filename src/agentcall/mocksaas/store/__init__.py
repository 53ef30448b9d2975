"""SQLite state of the Mock SaaS (WAL): one transaction per admin decision."""
