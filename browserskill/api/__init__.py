"""The HTTP API (docs/http-api.md): routes, error rendering, OpenAPI document; and the
daemon's process that serves it (`python -m browserskill.api`)."""
