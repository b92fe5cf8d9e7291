"""Browser links: how tools reach a browser (CDP today; the extension relay later)."""
