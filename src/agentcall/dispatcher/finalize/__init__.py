"""Ending an execution and storing its single call.result; shared by calls and recording."""
