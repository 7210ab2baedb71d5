"""Pool config models and pure schedulers (priority, fair share, round robin).

Empty until issue 3; imports nothing of ours (import-linter checks).
"""
