"""The provisioning loops of pools with a provider: tick, demand, waiting work, storage."""
