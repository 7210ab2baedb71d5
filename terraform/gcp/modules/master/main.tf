# The master VM. Its start-up script (startup.sh.tftpl) installs the Resolute wheel the CLI
# uploaded, reads the database password from Secret Manager, writes the master config
# (master.yaml.tftpl) and starts det-master as a systemd service. Both templates use only plain
# ${name} interpolation so that cli/deploy/gcp_template.py renders them identically from the
# same files; the maps below are the whole of what they receive.

locals {
  master_config_vars = {
    cluster_id                   = var.cluster_id
    project_id                   = var.project_id
    region                       = var.region
    zone                         = var.zone
    master_port                  = var.master_port
    master_internal_ip           = var.internal_ip
    network                      = var.network
    subnetwork                   = var.subnetwork
    agent_service_account_email  = var.agent_service_account_email
    agent_tag                    = var.agent_tag
    agent_prefix                 = var.agent_prefix
    agents_label                 = var.agents_label
    bucket                       = var.bucket
    state_bucket                 = var.state_bucket
    resolute_wheel               = var.resolute_wheel
    db_host                      = var.db_host
    db_name                      = var.db_name
    db_user                      = var.db_user
    aux_agent_instance_type      = var.aux_agent_instance_type
    compute_agent_instance_type  = var.compute_agent_instance_type
    gpu_type                     = var.gpu_type
    gpu_num                      = var.gpu_num
    agent_image                  = var.agent_image
    min_dynamic_agents           = var.min_dynamic_agents
    max_dynamic_agents           = var.max_dynamic_agents
    max_aux_containers_per_agent = var.max_aux_containers_per_agent
    max_idle_agent_period        = var.max_idle_agent_period
    max_agent_starting_period    = var.max_agent_starting_period
    preemptible                  = var.preemptible
    scheduler_type               = var.scheduler_type
    preemption_enabled           = var.preemption_enabled
    master_scheme                = var.master_scheme
    master_cert_name             = var.master_cert_name
  }
  startup_vars = {
    project_id       = var.project_id
    state_bucket     = var.state_bucket
    resolute_wheel   = var.resolute_wheel
    resolute_version = var.resolute_version
    db_secret_id     = var.db_secret_id
    master_port      = var.master_port
    master_tls       = var.master_tls
    tls_cert_id      = var.tls_cert_id
    tls_key_id       = var.tls_key_id
    master_config    = templatefile("${path.module}/master.yaml.tftpl", local.master_config_vars)
  }
}

resource "google_compute_instance" "master" {
  #checkov:skip=CKV_GCP_38:Customer-supplied keys would have to be given at every start, which an unattended master cannot do; the disk is encrypted with Google-managed keys and holds no secret but the master config.
  name                      = var.name
  zone                      = var.zone
  machine_type              = var.machine_type
  tags                      = [var.master_tag]
  labels                    = merge(var.labels, { "resolute-role" = "master" })
  allow_stopping_for_update = true

  boot_disk {
    initialize_params {
      image = var.image
      size  = 50
      type  = "pd-balanced"
    }
  }

  network_interface {
    subnetwork = var.subnetwork_id
    network_ip = var.internal_ip

    access_config {
      nat_ip = var.external_ip
    }
  }

  service_account {
    email  = var.service_account_email
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot          = true
    enable_vtpm                 = true
    enable_integrity_monitoring = true
  }

  # A changed script (a new Resolute version, new settings) replaces the VM, so that it boots
  # with it: the master keeps nothing on its disk that the database and the bucket do not hold.
  metadata_startup_script = templatefile("${path.module}/startup.sh.tftpl", local.startup_vars)

  metadata = {
    block-project-ssh-keys = "true"
    enable-oslogin         = "TRUE"
    resolute-version       = var.resolute_version
  }
}
