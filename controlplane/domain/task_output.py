"""Reading a task's output line as Determined's log shipper does (pure).

The harness launcher parses the lines it ships itself; the output of a task that runs its
command directly reaches the master raw (agent ``ContainerOutput``), so the master reads the
same prefixes: a leading ``[rank=N]`` (the rank that printed it, from Determined's
``wrap_rank``), then a leading ``LEVEL:`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``,
``CRITICAL``), each with the spaces around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RANK = re.compile(r" ?\[rank=([0-9]+)\] ?")
_LEVEL = re.compile(r" ?(DEBUG|INFO|WARNING|ERROR|CRITICAL): ?")
# A rank that fits the column; a longer run of digits is left in the text.
MAX_RANK = 2**31 - 1


@dataclass(frozen=True)
class OutputLine:
    text: str
    rank_id: int | None = None
    level: str | None = None

    @property
    def stored_level(self) -> str:
        return f"LOG_LEVEL_{self.level or 'INFO'}"


def read_line(text: str) -> OutputLine:
    rank_id = None
    m = _RANK.match(text)
    if m and int(m.group(1)) <= MAX_RANK:
        rank_id = int(m.group(1))
        text = text[m.end() :]
    level = None
    m = _LEVEL.match(text)
    if m:
        level = m.group(1)
        text = text[m.end() :]
    return OutputLine(text, rank_id, level)
