output "network_id" {
  value = google_compute_network.cluster.id
}

output "network_name" {
  value = google_compute_network.cluster.name
}

output "subnetwork_id" {
  value = google_compute_subnetwork.cluster.id
}

output "subnetwork_name" {
  value = google_compute_subnetwork.cluster.name
}

output "private_connection" {
  description = "The peering Cloud SQL's private IP depends on."
  value       = google_service_networking_connection.private_services.id
}
