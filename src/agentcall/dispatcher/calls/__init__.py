"""Driving accepted executions through the cell and producing their one call.result."""
