"""Default descriptions for commands: `Command (adjective-noun)`, as Determined names them.

The words come from the task id, so the same id always gets the same name (no hidden randomness).
"""

from __future__ import annotations

import hashlib

ADJECTIVES = (
    "able", "brave", "calm", "clever", "eager", "fair", "gentle", "glad", "happy", "jolly",
    "keen", "kind", "lively", "lucky", "merry", "mighty", "neat", "noble", "polite", "proud",
    "quick", "quiet", "rapid", "sharp", "shy", "smart", "steady", "sunny", "swift", "tidy",
    "vivid", "witty",
)  # fmt: skip
NOUNS = (
    "ant", "bass", "bee", "bison", "cat", "crane", "deer", "dove", "eel", "elk", "finch",
    "fox", "gnu", "hare", "hawk", "ibis", "koala", "lark", "lemur", "lynx", "mole", "moth",
    "newt", "otter", "owl", "panda", "quail", "seal", "swan", "toad", "wasp", "yak",
)  # fmt: skip


def default_description(task_id: str, kind: str = "Command") -> str:
    digest = hashlib.sha256(task_id.encode()).digest()
    return f"{kind} ({ADJECTIVES[digest[0] % len(ADJECTIVES)]}-{NOUNS[digest[1] % len(NOUNS)]})"
