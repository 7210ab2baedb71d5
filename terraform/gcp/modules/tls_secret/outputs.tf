# The ids once the versions exist, so that the master boots only after them; "" without TLS.
output "cert_secret_id" {
  value      = var.enabled ? var.cert_secret_id : ""
  depends_on = [google_secret_manager_secret_version.cert]
}

output "key_secret_id" {
  value      = var.enabled ? var.key_secret_id : ""
  depends_on = [google_secret_manager_secret_version.key]
}
