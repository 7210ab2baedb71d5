"""The Provisioner protocol, a pure scale decider, AWS and GCP implementations.

May import only resource_pools config types; each cloud SDK is imported in exactly one module
(`aws_ec2` for boto3, `gcp_compute` for google-cloud-compute).
"""
