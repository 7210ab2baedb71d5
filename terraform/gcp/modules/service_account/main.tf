# Least privilege for the master and the agents.
#
# The master gets one custom role, bound on the project with a condition: it may create, read and
# delete only instances and disks whose names start with the cluster's agent prefix in its zone
# (the permissions that apply to other resource types, such as using the subnetwork, reading
# zone operations and the boot image, pass the condition's first clause). It may act as the agent
# service account only (a binding on that account, not on the project), write the cluster's
# bucket (modules/gcs), read the database password secret (modules/secret) and write logs. It
# needs no Cloud SQL role: it connects over the private IP with a password.
# Agents get logs and the bucket, nothing in Compute.

locals {
  create_master = var.service_account_email == ""
  master_email  = local.create_master ? google_service_account.master[0].email : var.service_account_email
  zone_prefix   = "projects/${var.project_id}/zones/${var.zone}"
  agent_condition = join(" || ", [
    "(resource.type != \"compute.googleapis.com/Instance\" && resource.type != \"compute.googleapis.com/Disk\")",
    "resource.name.startsWith(\"${local.zone_prefix}/instances/${var.agent_prefix}\")",
    "resource.name.startsWith(\"${local.zone_prefix}/disks/${var.agent_prefix}\")",
  ])
  master_permissions = [
    "compute.disks.create",
    "compute.disks.setLabels",
    "compute.images.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.list",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
    "compute.zoneOperations.list",
  ]
  log_roles = ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
}

resource "google_service_account" "master" {
  count        = local.create_master ? 1 : 0
  account_id   = "${var.cluster_id}-master"
  display_name = "Resolute master of ${var.cluster_id}"
}

resource "google_service_account" "agent" {
  account_id   = "${var.cluster_id}-agent"
  display_name = "Resolute agents of ${var.cluster_id}"
}

resource "google_project_iam_custom_role" "master" {
  count       = local.create_master ? 1 : 0
  role_id     = "resolute_master_${replace(var.cluster_id, "-", "_")}"
  title       = "Resolute master of ${var.cluster_id}"
  description = "Create and delete the cluster's dynamic agents."
  permissions = local.master_permissions
}

resource "google_project_iam_member" "master_compute" {
  count   = local.create_master ? 1 : 0
  project = var.project_id
  role    = google_project_iam_custom_role.master[0].name
  member  = "serviceAccount:${local.master_email}"

  condition {
    title       = "only-${var.cluster_id}-agents"
    description = "Instances and disks named with the cluster's agent prefix."
    expression  = local.agent_condition
  }
}

resource "google_project_iam_member" "master_logs" {
  for_each = toset(local.create_master ? local.log_roles : [])
  project  = var.project_id
  role     = each.value
  member   = "serviceAccount:${local.master_email}"
}

resource "google_project_iam_member" "agent_logs" {
  for_each = toset(local.log_roles)
  project  = var.project_id
  role     = each.value
  member   = google_service_account.agent.member
}

resource "google_service_account_iam_member" "master_uses_agent_account" {
  service_account_id = google_service_account.agent.name
  role               = "roles/iam.serviceAccountUser"
  member             = "serviceAccount:${local.master_email}"
}
