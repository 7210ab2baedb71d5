output "master_email" {
  value = local.master_email
}

output "master_member" {
  value = "serviceAccount:${local.master_email}"
}

output "agent_email" {
  value = google_service_account.agent.email
}

output "agent_member" {
  value = google_service_account.agent.member
}
