# Cloud SQL PostgreSQL, version pinned, private IP only, TLS required, daily backups with
# point-in-time recovery, and deletion protection unless `down --delete-data` lifted it.

resource "google_sql_database_instance" "master" {
  #checkov:skip=CKV_GCP_79:Pinned to the PostgreSQL major version Resolute's tests run against; upgraded deliberately, not by the scanner's idea of latest.
  #checkov:skip=CKV_GCP_6:require_ssl was removed in google provider 6; ssl_mode ENCRYPTED_ONLY below is its replacement.
  #checkov:skip=CKV2_GCP_13:log_duration logs every statement's duration; the master's frequent short queries would flood the log. log_min_duration_statement is the switch to use when needed.
  name                = var.name
  region              = var.region
  database_version    = "POSTGRES_15"
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

    database_flags {
      name  = "log_min_error_statement"
      value = "error"
    }

    database_flags {
      name  = "log_hostname"
      value = "on"
    }

    database_flags {
      name  = "log_statement"
      value = "ddl"
    }

    database_flags {
      name  = "cloudsql.enable_pgaudit"
      value = "on"
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
