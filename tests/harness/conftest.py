"""Harness tests: pure parts over fakes, and the launcher as a real process against a master."""

from tests.support.live_fixtures import agents as agents
from tests.support.live_fixtures import start_master as start_master
