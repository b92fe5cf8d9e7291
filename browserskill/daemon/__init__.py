"""The long-lived daemon: the only place with state."""
