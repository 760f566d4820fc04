"""Long-running services on a plain Linux host (the CTyun master and nodes), outside any Slurm
job: the one systemd unit renderer and the one way to drop root, shared by the router
(components/router/host.py) and the metrics services (components/ctyun_hcc/monitoring.py).

- units.py (pure): `unit` (a unit kept running for ever, run as a dynamic user, a named
  user, or root with what hardening root allows) and `supervise_sh` (the restart loop where
  the host has no systemd, dropping root the same way with setpriv).
"""
