"""Report blocks built from the resource samples: MEMORY, I/O and GPU."""
