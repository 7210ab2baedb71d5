"""What runs inside a task container around the user's command: the launcher and log shipper."""
