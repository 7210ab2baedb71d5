"""resource_pools"""
