"""The base layer: what every other layer may use, importing nothing above it.

The wire contract and error codes, the tool catalog (pure data), paths, the
command-line language (`cli_args`, `cli_render`) and the text of answers
(`render`), and the I/O-free cores the layers above share (docs/design.md,
"Layers").
"""
