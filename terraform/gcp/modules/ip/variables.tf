variable "cluster_id" {
  type = string
}

variable "region" {
  type = string
}

variable "subnetwork" {
  type = string
}

variable "labels" {
  type = map(string)
}
