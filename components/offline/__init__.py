"""The offline program: the real `__main__.py` run under Pulumi's mock engine (runner.py)."""
