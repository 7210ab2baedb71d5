"""``python3 -m determined.launch.torch_distributed [OVERRIDES... --] (--trial T | SCRIPT...)``:
``harness.launch.torch_distributed`` (one worker per slot through torch.distributed's launcher,
across the allocation's containers; ``--trial model_def:Trial`` runs a legacy PyTorchTrial)."""

from __future__ import annotations

import sys

from harness.launch import torch_distributed as _launch
from harness.launch.torch_distributed import C10D_PORT, parse_args


def main(override_args: list[str], script: list[str]) -> int:
    """Determined's signature: torch.distributed.run overrides, then the worker command."""
    return _launch.main([*(override_args or []), "--", *script])


__all__ = ["C10D_PORT", "main", "parse_args"]

if __name__ == "__main__":
    sys.exit(_launch.main(sys.argv[1:]))
