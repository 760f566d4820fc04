"""The program's spine: the target contract (contract.py), the registry of targets
(registry.py) and config -> plan -> launch spec (pipeline.py)."""
