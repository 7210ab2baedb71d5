# The cluster's own VPC: one subnetwork with flow logs and Private Google Access (agents have no
# external IP), Cloud NAT for package downloads, and the private services peering Cloud SQL's
# private IP needs.

resource "google_compute_network" "cluster" {
  #checkov:skip=CKV2_GCP_18:The network's firewall rules are in modules/firewall, which checkov's graph does not connect to this module.
  name                    = var.network
  auto_create_subnetworks = false
}

resource "google_compute_subnetwork" "cluster" {
  name                     = "${var.network}-${var.region}"
  region                   = var.region
  network                  = google_compute_network.cluster.id
  ip_cidr_range            = var.subnetwork_cidr
  private_ip_google_access = true

  log_config {
    aggregation_interval = "INTERVAL_10_MIN"
    flow_sampling        = 0.5
    metadata             = "INCLUDE_ALL_METADATA"
  }
}

resource "google_compute_router" "nat" {
  name    = "${var.cluster_id}-router"
  region  = var.region
  network = google_compute_network.cluster.id
}

resource "google_compute_router_nat" "nat" {
  name                               = "${var.cluster_id}-nat"
  router                             = google_compute_router.nat.name
  region                             = var.region
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"

  log_config {
    enable = true
    filter = "ERRORS_ONLY"
  }
}

resource "google_compute_global_address" "private_services" {
  name          = "${var.cluster_id}-private-services"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = 20
  network       = google_compute_network.cluster.id
}

resource "google_service_networking_connection" "private_services" {
  network                 = google_compute_network.cluster.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.private_services.name]
  # Deleting the peering right after Cloud SQL fails while Google still holds the producer side;
  # abandoning it is safe, since deleting the network below removes the peering with it.
  deletion_policy = "ABANDON"
}
