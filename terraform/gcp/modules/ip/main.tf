# Static addresses of the master: the external one users reach, and an internal one the agents
# dial, so the master config can name it before the VM exists and it survives a VM replacement.

resource "google_compute_address" "external" {
  name         = "${var.cluster_id}-master"
  region       = var.region
  address_type = "EXTERNAL"
  labels       = var.labels
}

resource "google_compute_address" "internal" {
  name         = "${var.cluster_id}-master-internal"
  region       = var.region
  address_type = "INTERNAL"
  subnetwork   = var.subnetwork
  labels       = var.labels
}
