"""End-to-end workload: ignores SIGTERM and sleeps; only SIGKILL ends it."""

import signal
import time

signal.signal(signal.SIGTERM, lambda *_: print("SIGTERM ignored", flush=True))
print("stubborn task running", flush=True)
while True:
    time.sleep(1)
