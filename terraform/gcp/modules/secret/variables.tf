variable "secret_id" {
  type = string
}

variable "password" {
  type      = string
  sensitive = true
}

variable "generate" {
  type        = bool
  description = "Generate the password instead of using var.password."
}

variable "labels" {
  type = map(string)
}

variable "accessor" {
  type        = string
  description = "IAM member (the master) that reads the secret at boot."
}
