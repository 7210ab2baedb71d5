"""``python3 -m determined.launch.wrap_rank [--no-redirect-stdio] RANK SCRIPT...``: prefix each
line of SCRIPT's output with its rank (``harness.launch.wrap_rank``)."""

import sys

from harness.launch import wrap_rank as _wrap_rank


def main() -> int:
    """Determined's signature: the arguments come from ``sys.argv``."""
    return _wrap_rank.main(sys.argv[1:])


__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
