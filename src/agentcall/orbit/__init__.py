"""orbit."""
