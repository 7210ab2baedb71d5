variable "cluster_id" {
  type = string
}

variable "project_id" {
  type = string
}

variable "zone" {
  type = string
}

variable "agent_prefix" {
  type        = string
  description = "Name prefix of the dynamic agents; the master may create and delete only those."
}

variable "service_account_email" {
  type        = string
  description = "An existing master service account; empty creates one (and grants it the roles below)."
}
