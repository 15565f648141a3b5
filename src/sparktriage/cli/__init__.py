"""The command line: typer commands that parse options, call the core and render. No logic."""
