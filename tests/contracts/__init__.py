"""Machine-readable contracts of the external systems kimi-k3 talks to (one folder each)."""
