"""Pure core of the Dispatcher: frozen data and decisions with ``now`` passed in, no I/O."""
