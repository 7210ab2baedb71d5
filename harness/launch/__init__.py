"""Launch layers that run a trial's command on all its slots (Determined's ``determined.launch``).

``python3 -m harness.launch.torch_distributed [TORCH_OVERRIDES... --] SCRIPT...`` starts one
process per slot through torch.distributed's own launcher, across the allocation's containers
(see docs/distributed.md). Standard library only: torch runs in the processes it starts.
"""
