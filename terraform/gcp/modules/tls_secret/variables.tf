variable "enabled" {
  type        = bool
  description = "The master serves HTTPS: store the certificate and key."
}

variable "cert_secret_id" {
  type = string
}

variable "key_secret_id" {
  type = string
}

variable "cert" {
  type      = string
  sensitive = true
}

variable "key" {
  type      = string
  sensitive = true
}

variable "labels" {
  type = map(string)
}

variable "accessor" {
  type        = string
  description = "IAM member (the master) that reads the secrets at boot."
}
