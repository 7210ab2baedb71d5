variable "cluster_id" {
  type = string
}

variable "region" {
  type = string
}

variable "network" {
  type = string
}

variable "subnetwork_cidr" {
  type = string
}
