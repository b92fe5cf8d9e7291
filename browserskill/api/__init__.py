"""The HTTP API (DESIGN §8): routes, error rendering, OpenAPI document."""
