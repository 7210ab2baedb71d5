output "private_ip" {
  value = google_sql_database_instance.master.private_ip_address
}

output "instance_name" {
  value = google_sql_database_instance.master.name
}

output "db_name" {
  value = google_sql_database.master.name
}

output "db_user" {
  value = google_sql_user.master.name
}
