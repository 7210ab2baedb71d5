"""The master side of resource pools: connected agents, pool snapshots, the scheduling loop.

`resource_pools` decides (pure: snapshot in, plan out); this package loads the snapshot from
the database and the agent registry, and carries the plan out: allocation rows, preemption
flags and `StartContainer` messages to agents. A service asks for a pass with
`controlplane.services.reschedule`, so that it need not import this package.
"""
