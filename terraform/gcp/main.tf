# A Resolute cluster on GCP: network, least-privilege service accounts, firewall, checkpoint
# bucket, Cloud SQL PostgreSQL, a static IP and the master VM. Dynamic agents are not Terraform
# resources: the master creates and deletes them, and `det deploy gcp down` deletes any left
# (by the resolute-agents label) before `terraform destroy`.

provider "google" {
  project = var.project_id
  region  = var.region
  zone    = var.zone
}

locals {
  labels       = merge(var.labels, { "resolute-cluster" = var.cluster_id })
  master_tag   = "resolute-master-${var.cluster_id}"
  agent_tag    = "resolute-agent-${var.cluster_id}"
  agent_prefix = "${var.cluster_id}-agent-"
  bucket_name  = "${var.cluster_id}-${var.project_id}-ckpt"
  db_instance  = "${var.cluster_id}-db"
  master_name  = "${var.cluster_id}-master"
  wheel_prefix = "wheels/"
  agents_label = "resolute-agents"
  db_name      = "resolute"
  db_user      = "resolute"
  db_secret_id = "${var.cluster_id}-db-password"
  tls_cert_id  = "${var.cluster_id}-master-tls-cert"
  tls_key_id   = "${var.cluster_id}-master-tls-key"
  # count cannot use a value derived from a sensitive one; whether a password was given is not
  # secret, the password is.
  generate_secret = nonsensitive(var.db_password == "")
}

module "network" {
  source          = "./modules/network"
  cluster_id      = var.cluster_id
  region          = var.region
  network         = var.network
  subnetwork_cidr = var.subnetwork_cidr
}

module "ip" {
  source     = "./modules/ip"
  cluster_id = var.cluster_id
  region     = var.region
  subnetwork = module.network.subnetwork_id
  labels     = local.labels
}

module "service_account" {
  source                = "./modules/service_account"
  cluster_id            = var.cluster_id
  project_id            = var.project_id
  zone                  = var.zone
  agent_prefix          = local.agent_prefix
  service_account_email = var.service_account_email
}

module "firewall" {
  source          = "./modules/firewall"
  cluster_id      = var.cluster_id
  network         = module.network.network_name
  inbound_cidr    = var.inbound_cidr
  subnetwork_cidr = var.subnetwork_cidr
  master_port     = var.master_port
  master_tag      = local.master_tag
  agent_tag       = local.agent_tag
}

module "gcs" {
  source              = "./modules/gcs"
  name                = local.bucket_name
  region              = var.region
  labels              = local.labels
  allow_data_deletion = var.allow_data_deletion
  writers = {
    master = module.service_account.master_member
    agent  = module.service_account.agent_member
  }
  state_bucket = var.state_bucket
  wheel_prefix = local.wheel_prefix
}

module "secret" {
  source    = "./modules/secret"
  secret_id = local.db_secret_id
  password  = var.db_password
  generate  = local.generate_secret
  labels    = local.labels
  accessor  = module.service_account.master_member
}

module "tls_secret" {
  source         = "./modules/tls_secret"
  enabled        = var.master_tls
  cert_secret_id = local.tls_cert_id
  key_secret_id  = local.tls_key_id
  cert           = var.master_tls_cert
  key            = var.master_tls_key
  labels         = local.labels
  accessor       = module.service_account.master_member
}

module "database" {
  source              = "./modules/database"
  name                = local.db_instance
  region              = var.region
  tier                = var.db_tier
  disk_size           = var.db_size
  network_id          = module.network.network_id
  private_connection  = module.network.private_connection
  db_name             = local.db_name
  db_user             = local.db_user
  password            = module.secret.password
  allow_data_deletion = var.allow_data_deletion
  labels              = local.labels
}

module "master" {
  source                       = "./modules/master"
  name                         = local.master_name
  cluster_id                   = var.cluster_id
  project_id                   = var.project_id
  region                       = var.region
  zone                         = var.zone
  machine_type                 = var.master_instance_type
  image                        = var.master_image
  master_port                  = var.master_port
  network                      = module.network.network_name
  subnetwork                   = module.network.subnetwork_name
  subnetwork_id                = module.network.subnetwork_id
  external_ip                  = module.ip.external_address
  internal_ip                  = module.ip.internal_address
  service_account_email        = module.service_account.master_email
  agent_service_account_email  = module.service_account.agent_email
  master_tag                   = local.master_tag
  agent_tag                    = local.agent_tag
  agent_prefix                 = local.agent_prefix
  agents_label                 = local.agents_label
  labels                       = local.labels
  bucket                       = module.gcs.bucket_name
  state_bucket                 = var.state_bucket
  resolute_wheel               = var.resolute_wheel
  resolute_version             = var.resolute_version
  db_host                      = module.database.private_ip
  db_name                      = module.database.db_name
  db_user                      = module.database.db_user
  db_secret_id                 = module.secret.secret_id
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
  master_tls                   = var.master_tls
  master_scheme                = var.master_tls ? "https" : "http"
  master_cert_name             = var.master_cert_name
  tls_cert_id                  = module.tls_secret.cert_secret_id
  tls_key_id                   = module.tls_secret.key_secret_id
}
