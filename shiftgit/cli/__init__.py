"""The command line: click skins over the core, one module per command group."""
