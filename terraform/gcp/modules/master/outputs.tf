output "name" {
  value = google_compute_instance.master.name
}

output "self_link" {
  value = google_compute_instance.master.self_link
}
