"""The agent daemon, device detection and container runtimes.

Empty until issue 4; imports nothing of ours but its own protocol module.
"""
