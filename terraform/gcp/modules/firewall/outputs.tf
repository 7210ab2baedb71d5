output "rules" {
  description = "Names of the cluster's firewall rules."
  value = [
    google_compute_firewall.master_from_inbound.name,
    google_compute_firewall.ssh_from_inbound.name,
    google_compute_firewall.internal.name,
  ]
}
