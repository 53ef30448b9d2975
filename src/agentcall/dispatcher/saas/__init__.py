"""Edge to the SaaS HTTP API: the four read-only GETs (D-CFG-*, D-DISC-*)."""
