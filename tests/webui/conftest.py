from tests.support.live_fixtures import agents as agents
from tests.support.live_fixtures import start_master as start_master
