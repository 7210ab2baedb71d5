"""Pool config models and pure schedulers (priority, fair share, round robin).

Imports nothing of ours (import-linter checks).
"""
