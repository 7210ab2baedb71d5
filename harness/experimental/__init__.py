"""Determined's Python client of the master (``determined.experimental.client``), standard library
only: ``from harness.experimental import client``. See ``client``'s docstring."""
