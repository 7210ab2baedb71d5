# The root module's inputs. `det deploy gcp` writes every one of them to terraform.tfvars.json
# except db_password, which it passes as TF_VAR_db_password so that no file holds it
# (tests/cli/deploy/test_gcp_variables.py keeps the CLI and this file equal).

variable "cluster_id" {
  type        = string
  description = "Name of the cluster: lowercase letters, digits and '-', at most 22 characters (service account ids are at most 30)."
  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$", var.cluster_id))
    error_message = "cluster_id must be 1-22 lowercase letters, digits or '-', starting with a letter."
  }
}

variable "project_id" {
  type        = string
  description = "GCP project the cluster lives in."
}

variable "region" {
  type        = string
  description = "Region of the network, the database, the bucket and the static IP."
}

variable "zone" {
  type        = string
  description = "Zone of the master and of the dynamic agents."
}

variable "network" {
  type        = string
  description = "Name of the VPC network created for the cluster."
}

variable "subnetwork_cidr" {
  type        = string
  description = "Address range of the cluster's subnetwork."
}

variable "inbound_cidr" {
  type        = string
  description = "Addresses allowed to reach the master's port and SSH."
}

variable "master_instance_type" {
  type        = string
  description = "Machine type of the master VM."
}

variable "master_port" {
  type        = number
  description = "Port the master listens on."
}

variable "master_image" {
  type        = string
  description = "Boot image of the master VM (needs python3 and systemd)."
}

variable "aux_agent_instance_type" {
  type        = string
  description = "Machine type of the CPU-only aux pool's agents."
}

variable "compute_agent_instance_type" {
  type        = string
  description = "Machine type of the GPU compute pool's agents."
}

variable "gpu_type" {
  type        = string
  description = "Accelerator type of the compute pool's agents."
}

variable "gpu_num" {
  type        = number
  description = "GPUs per compute agent."
}

variable "agent_image" {
  type        = string
  description = "Boot image of the dynamic agents (needs python3 with pip)."
}

variable "min_dynamic_agents" {
  type        = number
  description = "Compute agents kept running with no work."
}

variable "max_dynamic_agents" {
  type        = number
  description = "Most compute agents at once."
}

variable "max_aux_containers_per_agent" {
  type        = number
  description = "Zero-slot tasks per aux agent."
}

variable "max_idle_agent_period" {
  type        = string
  description = "How long an idle agent lives, as a Go duration."
}

variable "max_agent_starting_period" {
  type        = string
  description = "How long a starting agent may take to connect, as a Go duration."
}

variable "preemptible" {
  type        = bool
  description = "Launch the compute agents as preemptible VMs."
}

variable "scheduler_type" {
  type        = string
  description = "fair_share, priority or round_robin."
  validation {
    condition     = contains(["fair_share", "priority", "round_robin"], var.scheduler_type)
    error_message = "scheduler_type must be fair_share, priority or round_robin."
  }
}

variable "preemption_enabled" {
  type        = bool
  description = "Let the priority scheduler preempt trials."
}

variable "service_account_email" {
  type        = string
  description = "An existing service account for the master; empty creates a least-privilege one."
}

variable "db_tier" {
  type        = string
  description = "Cloud SQL machine tier."
}

variable "db_size" {
  type        = number
  description = "Cloud SQL disk size in GB (grows automatically)."
}

variable "db_password" {
  type        = string
  sensitive   = true
  default     = ""
  description = "Password of the master's database user; empty generates one. Passed as TF_VAR_db_password, never in a file."
}

variable "allow_data_deletion" {
  type        = bool
  description = "Lift the database's deletion protection and let destroy empty the checkpoint bucket (down --delete-data)."
}

variable "state_bucket" {
  type        = string
  description = "Bucket holding the Terraform state, the variables and the Resolute wheel."
}

variable "resolute_wheel" {
  type        = string
  description = "File name of the Resolute wheel, kept in state_bucket under wheels/."
}

variable "resolute_version" {
  type        = string
  description = "Version of the Resolute wheel the master and agents install."
}

variable "labels" {
  type        = map(string)
  description = "Extra labels on every resource that takes labels."
}

variable "master_tls" {
  type        = bool
  description = "The master serves HTTPS with master_tls_cert and master_tls_key."
}

variable "master_cert_name" {
  type        = string
  description = "Host name the agents expect in the master's certificate (empty: its address)."
}

variable "master_tls_cert" {
  type        = string
  sensitive   = true
  default     = ""
  description = "PEM certificate (chain) of the master; passed as TF_VAR_master_tls_cert."
}

variable "master_tls_key" {
  type        = string
  sensitive   = true
  default     = ""
  description = "PEM private key of the master; passed as TF_VAR_master_tls_key."
}
