"""The use cases the HTTP edges call: each one a transaction over the store."""
