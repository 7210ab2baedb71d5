# The master's TLS certificate and key (det deploy gcp up --master-tls-cert/--master-tls-key) live
# in Secret Manager; the master's start-up script reads them at boot. They are never in instance
# metadata. Like the database password they are in the Terraform state, which only the deployer
# can read. Without TLS nothing is created.

resource "google_secret_manager_secret" "cert" {
  count     = var.enabled ? 1 : 0
  secret_id = var.cert_secret_id
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "cert" {
  count       = var.enabled ? 1 : 0
  secret      = google_secret_manager_secret.cert[0].id
  secret_data = var.cert
}

resource "google_secret_manager_secret_iam_member" "cert_accessor" {
  count     = var.enabled ? 1 : 0
  secret_id = google_secret_manager_secret.cert[0].id
  role      = "roles/secretmanager.secretAccessor"
  member    = var.accessor
}

resource "google_secret_manager_secret" "key" {
  count     = var.enabled ? 1 : 0
  secret_id = var.key_secret_id
  labels    = var.labels

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "key" {
  count       = var.enabled ? 1 : 0
  secret      = google_secret_manager_secret.key[0].id
  secret_data = var.key
}

resource "google_secret_manager_secret_iam_member" "key_accessor" {
  count     = var.enabled ? 1 : 0
  secret_id = google_secret_manager_secret.key[0].id
  role      = "roles/secretmanager.secretAccessor"
  member    = var.accessor
}
