# The checkpoint bucket: uniform bucket-level access, no public access, versioned; only the
# cluster's service accounts may use it. They may also read the Resolute wheel from the state
# bucket, and nothing else there: the state holds the database password.

resource "google_storage_bucket" "checkpoints" {
  #checkov:skip=CKV_GCP_62:Usage logs need a second bucket; Cloud Audit Logs (data access for Cloud Storage) record who read and wrote objects instead, see docs/deploy-gcp.md.
  name                        = var.name
  location                    = var.region
  labels                      = var.labels
  force_destroy               = var.allow_data_deletion
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  versioning {
    enabled = true
  }

  lifecycle_rule {
    condition {
      num_newer_versions = 1
      with_state         = "ARCHIVED"
    }
    action {
      type = "Delete"
    }
  }
}

resource "google_storage_bucket_iam_member" "writers" {
  for_each = var.writers
  bucket   = google_storage_bucket.checkpoints.name
  role     = "roles/storage.objectAdmin"
  member   = each.value
}

resource "google_storage_bucket_iam_member" "wheel_readers" {
  for_each = var.writers
  bucket   = var.state_bucket
  role     = "roles/storage.objectViewer"
  member   = each.value

  condition {
    title       = "resolute-wheels-only"
    description = "The Resolute wheels, not the Terraform state."
    expression  = "resource.name.startsWith(\"projects/_/buckets/${var.state_bucket}/objects/${var.wheel_prefix}\")"
  }
}
