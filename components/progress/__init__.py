"""Progress of long waits: the record file (record.py), its view (view.py), what the plan
expects of each wait (plan.py) and the program's side (program.py)."""
