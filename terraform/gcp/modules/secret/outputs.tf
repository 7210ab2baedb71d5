output "secret_id" {
  value = google_secret_manager_secret.db_password.secret_id
}

output "password" {
  value     = local.password
  sensitive = true
}
