# Users reach the master's port and SSH only from inbound_cidr; agents reach the master and each
# other (multi-agent trials) inside the subnetwork. Everything else inbound is GCE's default deny.

resource "google_compute_firewall" "master_from_inbound" {
  name          = "${var.cluster_id}-master-inbound"
  network       = var.network
  direction     = "INGRESS"
  source_ranges = [var.inbound_cidr]
  target_tags   = [var.master_tag]

  allow {
    protocol = "tcp"
    ports    = [tostring(var.master_port)]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_firewall" "ssh_from_inbound" {
  name          = "${var.cluster_id}-ssh-inbound"
  network       = var.network
  direction     = "INGRESS"
  source_ranges = [var.inbound_cidr]
  target_tags   = [var.master_tag, var.agent_tag]

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  log_config {
    metadata = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_firewall" "internal" {
  name          = "${var.cluster_id}-internal"
  network       = var.network
  direction     = "INGRESS"
  source_ranges = [var.subnetwork_cidr]
  target_tags   = [var.master_tag, var.agent_tag]

  allow {
    protocol = "tcp"
  }

  allow {
    protocol = "udp"
  }

  allow {
    protocol = "icmp"
  }
}
