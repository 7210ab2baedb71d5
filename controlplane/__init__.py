"""The Resolute master: API, services, database, loops."""
