output "bucket_name" {
  value = google_storage_bucket.checkpoints.name
}
