variable "name" {
  type = string
}

variable "region" {
  type = string
}

variable "labels" {
  type = map(string)
}

variable "allow_data_deletion" {
  type        = bool
  description = "Let destroy delete the bucket with its checkpoints."
}

variable "writers" {
  type        = map(string)
  description = "IAM members (the master's and the agents' service accounts) that read and write checkpoints, by a fixed key: the members are known only after apply, and for_each needs keys known at plan."
}

variable "state_bucket" {
  type = string
}

variable "wheel_prefix" {
  type = string
}
