output "master_url" {
  description = "Where `det -m` reaches the master."
  value       = "${var.master_tls ? "https" : "http"}://${module.ip.external_address}:${var.master_port}"
}

output "master_name" {
  description = "Name of the master VM."
  value       = module.master.name
}

output "master_internal_ip" {
  description = "Address the agents dial."
  value       = module.ip.internal_address
}

output "checkpoint_bucket" {
  description = "GCS bucket of the cluster's checkpoints."
  value       = module.gcs.bucket_name
}

output "database_instance" {
  description = "Cloud SQL instance of the master's database."
  value       = module.database.instance_name
}

output "db_password_secret" {
  description = "Secret Manager secret holding the database password."
  value       = module.secret.secret_id
}

output "network" {
  description = "VPC network of the cluster."
  value       = module.network.network_name
}

output "agent_label" {
  description = "Label (key=value) on every dynamic agent of this cluster."
  value       = "${local.agents_label}=${var.cluster_id}"
}

output "ssh_command" {
  description = "SSH to the master (from inbound_cidr)."
  value       = "gcloud compute ssh --project ${var.project_id} --zone ${var.zone} ${module.master.name}"
}
