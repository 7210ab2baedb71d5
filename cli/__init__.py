"""`det`: the command-line client for a Resolute (Determined-compatible) master."""

from importlib import metadata

try:
    __version__ = metadata.version("resolute")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
