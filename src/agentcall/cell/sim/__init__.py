"""The simulated mode: a JSON script decides how each callee behaves."""
