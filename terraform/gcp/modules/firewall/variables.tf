variable "cluster_id" {
  type = string
}

variable "network" {
  type = string
}

variable "inbound_cidr" {
  type = string
}

variable "subnetwork_cidr" {
  type = string
}

variable "master_port" {
  type = number
}

variable "master_tag" {
  type = string
}

variable "agent_tag" {
  type = string
}
