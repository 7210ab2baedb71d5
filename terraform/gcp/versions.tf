terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "= 6.14.1"
    }
    random = {
      source  = "hashicorp/random"
      version = "= 3.6.3"
    }
  }

  # Partial configuration: `det deploy gcp` passes bucket and prefix with -backend-config, so
  # the state lives in the cluster's state bucket and `down` works from any directory.
  backend "gcs" {}
}
