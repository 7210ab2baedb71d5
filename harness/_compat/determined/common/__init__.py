"""``determined.common``: only what user code of a task reaches for (``util``'s metric groups)."""
