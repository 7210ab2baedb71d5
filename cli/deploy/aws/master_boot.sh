#!/bin/bash
# Boot script of a Resolute master on EC2 (the shell part of its user-data, a CloudFormation
# Fn::Sub text: CloudFormation fills in each dollar-brace name, so this script spells its own variables
# $name, never with braces). It runs at every boot (the cloud-config part asks for that), so a
# stack update that changes it (a new wheel) takes effect at the next start. It holds no secret:
# the database and admin passwords (and the TLS key) are read from SSM by the service at each start.
# RESOLUTE_BOOT_ROOT, when set, prefixes every path: tests run this script in a sandbox.
set -euo pipefail
root=$(printenv RESOLUTE_BOOT_ROOT || true)
etc=$root/etc/resolute
venv=$root/opt/resolute/venv
wheels=$root/opt/resolute/wheels
units=$root/etc/systemd/system
mkdir -p "$etc" "$wheels" "$units"

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q python3-venv awscli

# The exact build of the CLI that deployed this cluster, from the cluster's own bucket. `up`
# uploads it as soon as the bucket exists, which may be a little after this boot begins.
wheel_key='${WheelKey}'
wheel=$wheels/$(basename "$wheel_key")
tries=0
until aws s3 cp --only-show-errors --region '${AWS::Region}' "s3://${CheckpointBucket}/$wheel_key" "$wheel"; do
  tries=$((tries + 1))
  if [ "$tries" -ge 90 ]; then
    echo "resolute: no wheel at s3://${CheckpointBucket}/$wheel_key after 15 minutes" >&2
    exit 1
  fi
  sleep 10
done
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "$wheel"'[aws]'

cat >"$etc/cluster.json" <<'FACTS'
{
  "cluster_id": "${AWS::StackName}",
  "region": "${AWS::Region}",
  "bucket": "${CheckpointBucket}",
  "wheel_key": "${WheelKey}",
  "agent_security_group": "${AgentSecurityGroupId}",
  "agent_instance_profile_arn": "${AgentInstanceProfileArn}",
  "subnet_id": "${AgentSubnet}",
  "key_name": "${KeyName}",
  "agent_image_id": "${AgentImageId}",
  "aux_instance_type": "${AuxAgentInstanceType}",
  "compute_instance_type": "${ComputeAgentInstanceType}",
  "max_dynamic_agents": ${MaxDynamicAgents},
  "max_aux_containers_per_agent": ${MaxAuxContainersPerAgent},
  "spot": ${Spot},
  "spot_max_price": "${SpotMaxPrice}",
  "max_idle_agent_period": "${MaxIdleAgentPeriod}",
  "max_agent_starting_period": "${MaxAgentStartingPeriod}",
  "scheduler_type": "${SchedulerType}",
  "preemption_enabled": ${PreemptionEnabled},
  "master_tls": ${MasterTls},
  "master_cert_name": "${MasterCertName}",
  "db_host": "${DbHost}",
  "db_port": "${DbPort}"
}
FACTS
"$venv/bin/python" -m cli.deploy.aws.boot config --facts "$etc/cluster.json" --out "$etc/master.yaml"

cat >"$units/resolute-master.service" <<UNIT
[Unit]
Description=Resolute master
Wants=network-online.target
After=network-online.target

[Service]
RuntimeDirectory=resolute
RuntimeDirectoryMode=0700
ExecStartPre=$venv/bin/python -m cli.deploy.aws.boot secrets --facts $etc/cluster.json --out /run/resolute/master.env
EnvironmentFile=-/run/resolute/master.env
ExecStart=$venv/bin/det-master --config-file $etc/master.yaml
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable resolute-master.service
systemctl restart resolute-master.service
