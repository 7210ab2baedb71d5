variable "name" {
  type = string
}

variable "region" {
  type = string
}

variable "tier" {
  type = string
}

variable "disk_size" {
  type = number
}

variable "network_id" {
  type = string
}

variable "private_connection" {
  type        = string
  description = "The private services peering; the instance's private IP needs it first."
}

variable "db_name" {
  type = string
}

variable "db_user" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

variable "allow_data_deletion" {
  type = bool
}

variable "labels" {
  type = map(string)
}
