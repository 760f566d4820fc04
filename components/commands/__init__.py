"""The subcommands of `python -m components`, one module each (registered in components/cli.py)."""
