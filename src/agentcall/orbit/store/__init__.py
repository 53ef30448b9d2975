"""Orbit's SQL store: SQLAlchemy Core over SQLite (aiosqlite) or MySQL/MariaDB (asyncmy).

`db` (engine, dialect differences, transactions, the database clock), `types`, `tables`
(one group per concept), `migrate` (Alembic, numbered revisions in `migrations/versions`),
`tenancy` (namespaces, queues, tokens), `tasks`, `journal` (events, audit), `idempotency`,
the submit writers (`submits` alone, `submit_group` by group commit), and the typed interface
the engine and the use cases call (`ports`: `transactions.SqlAttempts`, `task_store`).
"""
