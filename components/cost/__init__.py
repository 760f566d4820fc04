"""What a stack costs per hour while it runs, from a dated price catalog (pure, no I/O).

`prices` is the catalog: one entry per billed item, each with its source and the date it was
read; an item without a public price says so (`usd_per_hour` None) instead of guessing.
`estimate` counts what a planned stack bills (from the resources the program registers and the
plan) and prices it: `plan.json`'s `cost`.
"""
