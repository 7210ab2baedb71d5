# Cloud SQL PostgreSQL, version pinned, private IP only, TLS required, daily backups with
# point-in-time recovery, and deletion protection unless `down --delete-data` lifted it.

resource "google_sql_database_instance" "master" {
  name                = var.name
  region              = var.region
  database_version    = "POSTGRES_16"
  deletion_protection = !var.allow_data_deletion

  settings {
    tier                        = var.tier
    availability_type           = "ZONAL"
    disk_size                   = var.disk_size
    disk_autoresize             = true
    deletion_protection_enabled = !var.allow_data_deletion
    user_labels                 = var.labels

    backup_configuration {
      enabled                        = true
      start_time                     = "03:00"
      point_in_time_recovery_enabled = true

      backup_retention_settings {
        retained_backups = 7
      }
    }

    ip_configuration {
      ipv4_enabled    = false
      private_network = var.network_id
      ssl_mode        = "ENCRYPTED_ONLY"
    }

    database_flags {
      name  = "log_checkpoints"
      value = "on"
    }

    database_flags {
      name  = "log_connections"
      value = "on"
    }

    database_flags {
      name  = "log_disconnections"
      value = "on"
    }

    database_flags {
      name  = "log_lock_waits"
      value = "on"
    }

    database_flags {
      name  = "log_min_messages"
      value = "error"
    }

    database_flags {
      name  = "log_temp_files"
      value = "0"
    }

    database_flags {
      name  = "log_min_duration_statement"
      value = "-1"
    }
  }

  depends_on = [var.private_connection]
}

resource "google_sql_database" "master" {
  name     = var.db_name
  instance = google_sql_database_instance.master.name
}

resource "google_sql_user" "master" {
  name     = var.db_user
  instance = google_sql_database_instance.master.name
  password = var.password
}
