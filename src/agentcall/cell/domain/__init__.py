"""The cell's vocabulary: call states, outcomes and end causes (the wire's values), the
error tree, the ordered event log, and the readers of request fields."""
