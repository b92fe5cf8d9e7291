"""The HTTP API (docs/http-api.md): routes, error rendering, OpenAPI document."""
