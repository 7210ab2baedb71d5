#!/usr/bin/env python3
"""A fake `terraform` for the `det deploy gcp` tests: it records each call and does nothing.

Each call appends one JSON line to $FAKE_TF_LOG: argv, the working folder's variables file,
whether TF_VAR_db_password was set (and to what), and, for `destroy`, how many instances of the
cluster the fake Compute server listed at that moment ($FAKE_TF_GCE_LIST, a full list URL).
$FAKE_TF_FAIL=<sub-command>:<code> makes that sub-command exit with that code.
`output -json` prints a few outputs as Terraform would.
"""

import json
import os
import sys
import urllib.request
from pathlib import Path

args = sys.argv[1:]
command = args[0] if args else ""
record = {
    "args": args,
    "cwd": os.getcwd(),
    "db_password": os.environ.get("TF_VAR_db_password"),  # noqa: SIM112 - Terraform's own name,
    "master_tls_cert": os.environ.get("TF_VAR_master_tls_cert"),  # noqa: SIM112
    "master_tls_key": os.environ.get("TF_VAR_master_tls_key"),  # noqa: SIM112
}
variables = Path("terraform.tfvars.json")
if variables.exists():
    record["tfvars"] = json.loads(variables.read_text())
if command == "destroy" and os.environ.get("FAKE_TF_GCE_LIST"):
    with urllib.request.urlopen(os.environ["FAKE_TF_GCE_LIST"]) as answer:
        record["instances_at_destroy"] = len(json.load(answer).get("items", []))
if command != "output":
    with open(os.environ["FAKE_TF_LOG"], "a") as log:
        log.write(json.dumps(record) + "\n")
fail = os.environ.get("FAKE_TF_FAIL", "")
if fail.partition(":")[0] == command:
    print(f"Error: {command} failed (fake)", file=sys.stderr)
    sys.exit(int(fail.partition(":")[2]))
if command == "output":
    outputs = {
        "master_url": {"value": "http://203.0.113.7:8080", "type": "string", "sensitive": False},
        "agent_label": {"value": "resolute-agents=c1", "type": "string", "sensitive": False},
    }
    print(json.dumps(outputs))
