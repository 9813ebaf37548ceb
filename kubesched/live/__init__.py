"""Live mode: kubesched's components against a real cluster's API server, and snapshots of one."""
