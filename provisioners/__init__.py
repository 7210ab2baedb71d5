"""The Provisioner protocol, a pure scale decider, AWS and GCP implementations.

Empty until issue 6; may import only resource_pools config types.
"""
