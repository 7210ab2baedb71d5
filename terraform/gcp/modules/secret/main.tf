# The database password lives in Secret Manager; the master's start-up script reads it at boot.
# It is never in instance metadata. It is in the Terraform state (Cloud SQL's user resource
# needs it), which is why the state bucket is readable by the deployer only.

resource "random_password" "db" {
  count   = var.generate ? 1 : 0
  length  = 32
  special = false
}

locals {
  password = var.generate ? random_password.db[0].result : var.password
}

resource "google_secret_manager_secret" "db_password" {
  secret_id = var.secret_id
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "db_password" {
  secret      = google_secret_manager_secret.db_password.id
  secret_data = local.password
}

resource "google_secret_manager_secret_iam_member" "accessor" {
  secret_id = google_secret_manager_secret.db_password.id
  role      = "roles/secretmanager.secretAccessor"
  member    = var.accessor
}
