"""Edge to the media plane (the ``cell`` process): the port, its adapter over
``agentcall.cell.client`` and the in-memory fake the tests share."""
