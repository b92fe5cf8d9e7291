"""Browser tools: one implementation per catalog entry (the catalog, pure data, is
`base/catalog/`)."""
