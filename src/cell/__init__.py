"""cell."""
