"""Determined's module names in tasks (DESIGN §6): ``determined/`` here is Determined 0.38.1's
public Python API, each name a thin mapping onto the harness, for tasks whose Python has no
``determined`` package of its own.

This folder is never imported as ``harness._compat``: the task library's ``sitecustomize``
(``harness/_sitecustomize.py``) appends it to the END of ``sys.path``, so that ``import
determined`` finds a real determined installed in the task's Python first and this one
otherwise. Inside ``determined/``, modules import each other relatively and the harness
absolutely; tests/harness/compat/test_inventory.py checks the names, name by name, against the
real package.
"""
