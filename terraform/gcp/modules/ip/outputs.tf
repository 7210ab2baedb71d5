output "external_address" {
  value = google_compute_address.external.address
}

output "internal_address" {
  value = google_compute_address.internal.address
}
