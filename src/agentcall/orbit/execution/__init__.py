"""The execution engine: leasing loops, the transaction kernel, upkeep, eager dispatch, hints
and batching, over the store's typed interface (`agentcall.orbit.store.ports`). The use cases that
call it are `agentcall.orbit.usecases`; it imports the store and the domain, never the use cases or
the API."""
