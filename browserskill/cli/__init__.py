"""The `bsk` command: a thin, stdlib-only client of the daemon's HTTP API."""
