"""The long-lived daemon's parts wired together (`core.py`), the only place with state;
and how a front end starts it (`spawn.py`). Its process and HTTP API are in `api/`."""
