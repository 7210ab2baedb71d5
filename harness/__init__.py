"""Determined's Core API for user code (standard library only; torch only in harness.pytorch).

Empty until issue 5.
"""
