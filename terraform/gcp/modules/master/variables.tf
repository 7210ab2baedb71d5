variable "name" {
  type = string
}

variable "cluster_id" {
  type = string
}

variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "zone" {
  type = string
}

variable "machine_type" {
  type = string
}

variable "image" {
  type = string
}

variable "master_port" {
  type = number
}

variable "network" {
  type = string
}

variable "subnetwork" {
  type = string
}

variable "subnetwork_id" {
  type = string
}

variable "external_ip" {
  type = string
}

variable "internal_ip" {
  type = string
}

variable "service_account_email" {
  type = string
}

variable "agent_service_account_email" {
  type = string
}

variable "master_tag" {
  type = string
}

variable "agent_tag" {
  type = string
}

variable "agent_prefix" {
  type = string
}

variable "agents_label" {
  type = string
}

variable "labels" {
  type = map(string)
}

variable "bucket" {
  type = string
}

variable "state_bucket" {
  type = string
}

variable "resolute_wheel" {
  type = string
}

variable "resolute_version" {
  type = string
}

variable "db_host" {
  type = string
}

variable "db_name" {
  type = string
}

variable "db_user" {
  type = string
}

variable "db_secret_id" {
  type = string
}

variable "aux_agent_instance_type" {
  type = string
}

variable "compute_agent_instance_type" {
  type = string
}

variable "gpu_type" {
  type = string
}

variable "gpu_num" {
  type = number
}

variable "agent_image" {
  type = string
}

variable "min_dynamic_agents" {
  type = number
}

variable "max_dynamic_agents" {
  type = number
}

variable "max_aux_containers_per_agent" {
  type = number
}

variable "max_idle_agent_period" {
  type = string
}

variable "max_agent_starting_period" {
  type = string
}

variable "preemptible" {
  type = bool
}

variable "scheduler_type" {
  type = string
}

variable "preemption_enabled" {
  type = bool
}

variable "master_tls" {
  type = bool
}

variable "master_cert_name" {
  type = string
}

variable "master_scheme" {
  type        = string
  description = "https with master_tls, else http: how the agents dial the master."
}

variable "tls_cert_id" {
  type = string
}

variable "tls_key_id" {
  type = string
}
