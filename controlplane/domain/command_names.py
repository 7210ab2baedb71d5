"""Default names: `Command (adjective-noun)` for commands and `Experiment
(adverb-adjective-noun)` for an experiment config without a name, as Determined names them
(its three-word petname for experiments).

The words come from a seed the caller passes (a task id, a random token), so the same seed
always gets the same name (no hidden randomness).
"""

from __future__ import annotations

import hashlib

ADJECTIVES = (
    "able", "brave", "calm", "clever", "eager", "fair", "gentle", "glad", "happy", "jolly",
    "keen", "kind", "lively", "lucky", "merry", "mighty", "neat", "noble", "polite", "proud",
    "quick", "quiet", "rapid", "sharp", "shy", "smart", "steady", "sunny", "swift", "tidy",
    "vivid", "witty",
)  # fmt: skip
ADVERBS = (
    "amply", "boldly", "busily", "calmly", "deeply", "duly", "early", "easily", "evenly",
    "firmly", "freely", "gently", "gladly", "highly", "justly", "kindly", "largely", "lightly",
    "mainly", "neatly", "nicely", "openly", "partly", "quickly", "rarely", "really", "simply",
    "slowly", "subtly", "truly", "vastly", "wisely",
)  # fmt: skip
NOUNS = (
    "ant", "bass", "bee", "bison", "cat", "crane", "deer", "dove", "eel", "elk", "finch",
    "fox", "gnu", "hare", "hawk", "ibis", "koala", "lark", "lemur", "lynx", "mole", "moth",
    "newt", "otter", "owl", "panda", "quail", "seal", "swan", "toad", "wasp", "yak",
)  # fmt: skip


def default_description(task_id: str, kind: str = "Command") -> str:
    digest = hashlib.sha256(task_id.encode()).digest()
    return f"{kind} ({ADJECTIVES[digest[0] % len(ADJECTIVES)]}-{NOUNS[digest[1] % len(NOUNS)]})"


def default_experiment_name(seed: str) -> str:
    """`Experiment (adverb-adjective-noun)` for an experiment config that names none."""
    digest = hashlib.sha256(seed.encode()).digest()
    words = (
        ADVERBS[digest[0] % len(ADVERBS)],
        ADJECTIVES[digest[1] % len(ADJECTIVES)],
        NOUNS[digest[2] % len(NOUNS)],
    )
    return f"Experiment ({'-'.join(words)})"
