"""End-to-end workload: binary output and one enormous line, then `done`."""

import os
import sys

out = sys.stdout.buffer
out.write(b"binary: \x00\x01\xff\xfe\x80 end\n")
out.write(os.urandom(4096) + b"\n")
out.write(b"A" * (5 * 1024 * 1024) + b"\n")
out.write(b"no newline at the end, then " + b"done\n")
out.flush()
print("done", flush=True)
