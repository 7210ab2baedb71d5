"""What the real `det` 0.38.1 has that ours does not, each with its reason
(tests/compat/test_cli_inventory.py). Keys: a command path, or a command path and one flag."""

from __future__ import annotations

NOT_YET = "not built yet (issue 39: CLI parity)"

ENTERPRISE = "Determined's enterprise edition only (SSO, OAuth); Resolute has no SSO yet"
KUBERNETES = "Kubernetes only: Resolute schedules on agents (docs/api-compatibility.md)"
DEV = "Determined's developer tools for its generated bindings and raw calls; use curl with a token"
OTHER_LANE = (
    "not built yet (issue 39): `det shell` and `det task` lists, kills and logs do not take "
    "Determined's list and log options yet (cli/task_lists.py and cli/log_filters.py have them "
    "for the other task types)"
)
LOCAL_SPLIT = (
    "not built yet: the local deployment starts and stops its master and agents together "
    "(det deploy local cluster-up|cluster-down, up|down); one at a time is still to come"
)
_NAMES = {"NOT_YET", "ENTERPRISE", "KUBERNETES", "DEV", "OTHER_LANE", "LOCAL_SPLIT"}
_K8S_WORKSPACE_FLAGS = (
    "--namespace", "-n", "--auto-create-namespace", "--auto-create-namespace-all-clusters",
    "--cluster-name", "--resource-quota",
)  # fmt: skip


def _reason(key: str) -> str:
    """The reason a new gap would get: by where it is, else not built yet."""
    top = key.split()[0]
    if top in ("auth", "oauth"):
        return "ENTERPRISE"
    if top == "dev":
        return "DEV"
    if key.startswith(
        ("deploy gke-experimental", "workspace bindings", "workspace resource-quota")
    ):
        return "KUBERNETES"
    words = key.split()
    if words[:2] in (["workspace", "create"], ["workspace", "edit"]) and words[-1] in (
        _K8S_WORKSPACE_FLAGS
    ):
        return "KUBERNETES"
    if top in ("shell", "task"):
        return "OTHER_LANE"
    if key.startswith(("deploy local master-", "deploy local agent-")):
        return "LOCAL_SPLIT"
    return "NOT_YET"


GAPS: dict[str, str] = {
    "auth": ENTERPRISE,
    "auth list-providers": ENTERPRISE,
    "auth login": ENTERPRISE,
    "command config": NOT_YET,
    "command describe": NOT_YET,
    "checkpoint download": NOT_YET,
    "dev": DEV,
    "dev auth-token": DEV,
    "dev bindings": DEV,
    "dev bindings call": DEV,
    "dev bindings list": DEV,
    "dev curl": DEV,
    "experiment download": NOT_YET,
    "notebook config": NOT_YET,
    "oauth": ENTERPRISE,
    "oauth client": ENTERPRISE,
    "oauth client add": ENTERPRISE,
    "oauth client list": ENTERPRISE,
    "oauth client remove": ENTERPRISE,
    "shell config": OTHER_LANE,
    "task cleanup-logs": OTHER_LANE,
    "tensorboard config": NOT_YET,
    "trial download": NOT_YET,
    "trial support-bundle": NOT_YET,
    "workspace bindings": KUBERNETES,
    "workspace bindings delete": KUBERNETES,
    "workspace bindings list": KUBERNETES,
    "workspace bindings set": KUBERNETES,
    "workspace resource-quota": KUBERNETES,
    "workspace resource-quota set": KUBERNETES,
    "deploy gke-experimental": KUBERNETES,
    "deploy gke-experimental down": KUBERNETES,
    "deploy gke-experimental up": KUBERNETES,
    "deploy local agent-down": LOCAL_SPLIT,
    "deploy local agent-up": LOCAL_SPLIT,
    "deploy local master-down": LOCAL_SPLIT,
    "deploy local master-up": LOCAL_SPLIT,
    "command run --include": NOT_YET,
    "command run -i": NOT_YET,
    "experiment continue --follow-first-trial": NOT_YET,
    "experiment continue -f": NOT_YET,
    "experiment create --follow-first-trial": NOT_YET,
    "experiment create --include": NOT_YET,
    "experiment create --local": NOT_YET,
    "experiment create --test-mode": NOT_YET,
    "experiment create -i": NOT_YET,
    "experiment create -t": NOT_YET,
    "experiment describe --csv": NOT_YET,
    "experiment describe --metrics": NOT_YET,
    "experiment describe --outdir": NOT_YET,
    "master cluster-message get --yaml": NOT_YET,
    "master config --yaml": NOT_YET,
    "master config show --yaml": NOT_YET,
    "master info --yaml": NOT_YET,
    "notebook start --include": NOT_YET,
    "notebook start --preview": NOT_YET,
    "notebook start -i": NOT_YET,
    "shell kill --force": OTHER_LANE,
    "shell kill -f": OTHER_LANE,
    "shell list --csv": OTHER_LANE,
    "shell list --order-by": OTHER_LANE,
    "shell list --quiet": OTHER_LANE,
    "shell list --sort-by": OTHER_LANE,
    "shell list --workspace-name": OTHER_LANE,
    "shell list -q": OTHER_LANE,
    "shell list -w": OTHER_LANE,
    "shell logs --agent-id": OTHER_LANE,
    "shell logs --allocation-id": OTHER_LANE,
    "shell logs --container-id": OTHER_LANE,
    "shell logs --head": OTHER_LANE,
    "shell logs --level": OTHER_LANE,
    "shell logs --rank-id": OTHER_LANE,
    "shell logs --source": OTHER_LANE,
    "shell logs --stdtype": OTHER_LANE,
    "shell logs --timestamp-after": OTHER_LANE,
    "shell logs --timestamp-before": OTHER_LANE,
    "shell open --show-ssh-command": OTHER_LANE,
    "shell start --include": OTHER_LANE,
    "shell start --show-ssh-command": OTHER_LANE,
    "shell start --workspace-name": OTHER_LANE,
    "shell start -i": OTHER_LANE,
    "shell start -w": OTHER_LANE,
    "task list --csv": OTHER_LANE,
    "task logs --agent-id": OTHER_LANE,
    "task logs --allocation-id": OTHER_LANE,
    "task logs --container-id": OTHER_LANE,
    "task logs --head": OTHER_LANE,
    "task logs --level": OTHER_LANE,
    "task logs --rank-id": OTHER_LANE,
    "task logs --source": OTHER_LANE,
    "task logs --stdtype": OTHER_LANE,
    "task logs --timestamp-after": OTHER_LANE,
    "task logs --timestamp-before": OTHER_LANE,
    "tensorboard start --include": NOT_YET,
    "tensorboard start -i": NOT_YET,
    "token edit --json": NOT_YET,
    "token edit --yaml": NOT_YET,
    "trial describe --metrics": NOT_YET,
    "trial describe --metrics-summary": NOT_YET,
    "workspace create --agent-gid": NOT_YET,
    "workspace create --agent-group": NOT_YET,
    "workspace create --agent-uid": NOT_YET,
    "workspace create --agent-user": NOT_YET,
    "workspace create --auto-create-namespace": KUBERNETES,
    "workspace create --auto-create-namespace-all-clusters": KUBERNETES,
    "workspace create --cluster-name": KUBERNETES,
    "workspace create --namespace": KUBERNETES,
    "workspace create --resource-quota": KUBERNETES,
    "workspace create -n": KUBERNETES,
    "workspace edit --agent-gid": NOT_YET,
    "workspace edit --agent-group": NOT_YET,
    "workspace edit --agent-uid": NOT_YET,
    "workspace edit --agent-user": NOT_YET,
    "deploy --image-repo-prefix": NOT_YET,
    "deploy --no-preflight-checks": NOT_YET,
    "deploy --no-wait-for-master": NOT_YET,
    "deploy aws dump-master-config-template --deployment-type": NOT_YET,
    "deploy aws up --agent-reattach-enabled": NOT_YET,
    "deploy aws up --agent-reconnect-attempts": NOT_YET,
    "deploy aws up --agent-reconnect-backoff": NOT_YET,
    "deploy aws up --agent-subnet-id": NOT_YET,
    "deploy aws up --cpu-agent-instance-type": NOT_YET,
    "deploy aws up --cpu-env-image": NOT_YET,
    "deploy aws up --db-snapshot": NOT_YET,
    "deploy aws up --deployment-type": NOT_YET,
    "deploy aws up --det-version": NOT_YET,
    "deploy aws up --docker-pass": NOT_YET,
    "deploy aws up --docker-user": NOT_YET,
    "deploy aws up --efs-id": NOT_YET,
    "deploy aws up --enable-cors": NOT_YET,
    "deploy aws up --enterprise-edition": NOT_YET,
    "deploy aws up --fsx-id": NOT_YET,
    "deploy aws up --genai-shared-fs-mount-path": NOT_YET,
    "deploy aws up --genai-version": NOT_YET,
    "deploy aws up --gpu-agent-instance-type": NOT_YET,
    "deploy aws up --gpu-env-image": NOT_YET,
    "deploy aws up --log-group-prefix": NOT_YET,
    "deploy aws up --master-config-template-path": NOT_YET,
    "deploy aws up --max-cpu-containers-per-agent": NOT_YET,
    "deploy aws up --min-dynamic-agents": NOT_YET,
    "deploy aws up --no-prompt": NOT_YET,
    "deploy aws up --no-shut-down-agents-on-connection-loss": NOT_YET,
    "deploy aws up --no-update-terminate-agents": NOT_YET,
    "deploy aws up --notebook-timeout": NOT_YET,
    "deploy aws up --retain-log-group": NOT_YET,
    "deploy aws up --shut-down-agents-on-connection-loss": NOT_YET,
    "deploy aws up --update-terminate-agents": NOT_YET,
    "deploy aws up --yes": NOT_YET,
    "deploy gcp list --tf-state-gcs-bucket-name": NOT_YET,
    "deploy gcp list --yaml": NOT_YET,
    "deploy gcp up --cpu-agent-instance-type": NOT_YET,
    "deploy gcp up --cpu-env-image": NOT_YET,
    "deploy gcp up --det-version": NOT_YET,
    "deploy gcp up --disk-size": NOT_YET,
    "deploy gcp up --disk-type": NOT_YET,
    "deploy gcp up --filestore-address": NOT_YET,
    "deploy gcp up --gpu-agent-instance-type": NOT_YET,
    "deploy gcp up --gpu-env-image": NOT_YET,
    "deploy gcp up --initial-user-password": NOT_YET,
    "deploy gcp up --keypath": NOT_YET,
    "deploy gcp up --master-config-template-path": NOT_YET,
    "deploy gcp up --max-cpu-containers-per-agent": NOT_YET,
    "deploy gcp up --min-cpu-platform-agent": NOT_YET,
    "deploy gcp up --min-cpu-platform-master": NOT_YET,
    "deploy gcp up --no-filestore": NOT_YET,
    "deploy gcp up --operation-timeout-period": NOT_YET,
    "deploy local cluster-up --storage-host-path": NOT_YET,
}

if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from cli.main import app
    from tests.compat.conftest import det_venv
    from tests.support.cli_tree import gaps, our_tree, real_tree

    venv = det_venv()
    assert venv is not None
    found = gaps(real_tree(venv), our_tree(app))
    for key in (*found.commands, *found.flags):
        reason = _reason(key)
        print(f"    {key!r}: {reason if reason in _NAMES else repr(reason)},")
