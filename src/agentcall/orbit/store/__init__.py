"""Orbit's SQL store: SQLAlchemy Core over SQLite (aiosqlite) or MySQL/MariaDB (asyncmy).

`db` (engine, dialect differences, transactions, the database clock), `types`, `tables`
(one group per concept), `migrate` (Alembic, numbered revisions in `migrations/versions`),
`tenancy` (namespaces, queues, tokens), `tasks`, `journal` (events, audit), `idempotency`,
and `operations` (one transaction per API operation).
"""
