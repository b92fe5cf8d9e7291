from browserskill.cli.fast import launch

launch()
