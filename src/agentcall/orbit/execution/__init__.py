"""The execution engine: leasing loops, the transaction kernel, transitions, upkeep, eager dispatch
and batching. Imports the store and the domain, never the API."""
