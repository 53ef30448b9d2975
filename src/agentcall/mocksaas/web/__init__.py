"""HTTP edge (Starlette): the contract GETs, the admin API, health and metrics."""
