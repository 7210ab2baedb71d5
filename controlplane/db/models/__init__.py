"""ORM models, one module per aggregate; importing this package registers them all."""

from controlplane.db.models.checkpoints import Checkpoint
from controlplane.db.models.commands import Command
from controlplane.db.models.config_policies import ConfigPolicy
from controlplane.db.models.experiments import Experiment, ExperimentContext, Template
from controlplane.db.models.generic_tasks import GenericTask
from controlplane.db.models.jobs import Job
from controlplane.db.models.logs import TaskLog
from controlplane.db.models.metrics import Metric, MetricRollup
from controlplane.db.models.model_registry import ModelVersion, RegisteredModel
from controlplane.db.models.preferences import (
    ClusterMessage,
    ProjectActivity,
    UserSetting,
    WorkspacePin,
)
from controlplane.db.models.provisioning import (
    ProvisionerEvent,
    ProvisionerInstance,
    ProvisionerLaunch,
    ProvisionerState,
)
from controlplane.db.models.rbac import AuditEntry, GroupMember, RoleAssignment, UserGroup
from controlplane.db.models.tasks import Allocation, StateChange, Task
from controlplane.db.models.trial_sources import TrialSourceInfo
from controlplane.db.models.trials import Trial, TrialHparam
from controlplane.db.models.users import User, UserSession
from controlplane.db.models.webhooks import Webhook, WebhookDelivery, WebhookEvent, WebhookTrigger
from controlplane.db.models.workspace_pools import PoolBinding, PoolQuota
from controlplane.db.models.workspaces import ClusterInfo, Project, Workspace

__all__ = [
    "Allocation",
    "AuditEntry",
    "Checkpoint",
    "ClusterInfo",
    "ClusterMessage",
    "Command",
    "ConfigPolicy",
    "Experiment",
    "ExperimentContext",
    "GenericTask",
    "GroupMember",
    "Job",
    "Metric",
    "MetricRollup",
    "ModelVersion",
    "PoolBinding",
    "PoolQuota",
    "Project",
    "ProjectActivity",
    "ProvisionerEvent",
    "ProvisionerInstance",
    "ProvisionerLaunch",
    "ProvisionerState",
    "RegisteredModel",
    "RoleAssignment",
    "StateChange",
    "Task",
    "TaskLog",
    "Template",
    "Trial",
    "TrialHparam",
    "TrialSourceInfo",
    "User",
    "UserGroup",
    "UserSession",
    "UserSetting",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookTrigger",
    "Workspace",
    "WorkspacePin",
]
