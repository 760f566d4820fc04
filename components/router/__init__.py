"""The router in front of several Kimi K3 replicas (issue 23).

- settings.py (pure): vllm-router's pinned version, its command line and the times it
  promises (route around a dead replica, take it back);
- kk3_front.py: the allowlisting front clients reach (shipped as one file, runs beside the
  router; the router's admin routes are never exposed).
"""
