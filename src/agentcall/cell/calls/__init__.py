"""What a call is: the plan it is dialled from, its record in the cell's call table, and
the driver seam through which a mode (simulated, SIP) places it."""
