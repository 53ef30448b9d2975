"""Pure core of Orbit: no I/O, no clocks, no randomness except in `ids`.

Modules, one concept each: `errors` (the exception tree), `jsonvalue` (exact JSON values and
the compact encoder), `strictjson` (the strict request reader), `numbers` (exact number rules),
`times` (RFC 3339), `ids`, `canonical` (the orbit-json-v1 digest), `submit` and `cancel`
(request validation and defaults), `states` (task states and transitions), `task` (the task
record and its wire views), `cursor` (list cursors), `idempotency`, `tokens` (credentials).
"""
