"""mocksaas."""
