"""Orbit's HTTP API (Starlette): `app.create_app`, the error table, auth and the routes."""
