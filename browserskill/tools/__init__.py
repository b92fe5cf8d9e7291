"""Browser tools: the catalog (pure data) and one implementation per tool."""
