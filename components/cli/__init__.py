"""The command line, `python -m components COMMAND ...`: the dispatcher (main.py) and one module
per subcommand (plan.py, status.py, accept.py)."""
