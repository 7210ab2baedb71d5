"""`det deploy`: bring up a cluster (here: the local one, on this machine)."""
