"""What the cell keeps in its data directory across restarts: the originate log (every
call it dialled, guarded) and the approved SIP configuration it carries."""
