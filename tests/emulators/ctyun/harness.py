"""Start and drive the CTyun emulator as a separate process, the way tests and benchmarks do.

`EmulatorProcess(job_seconds=...)` runs `python -m tests.emulators.ctyun --port 0 ...` on
loopback, waits for its "listening on" line, and offers the admin calls. If the emulator cannot
start, it raises: tests must fail, never skip.

- `.env()`: CTYUN_AK, CTYUN_SK, CTYUN_ENDPOINT for a process that should talk to it;
- `.settings(**values)`: switch behaviours (state.Settings; returns all settings);
- `.faults(*{"path", "kind", ["seconds"], ["times"]})`: queue faults per API path;
- `.inventory()`: what the stack under test still holds (baseline/foreign left out);
- `.report()`: everything held (with owners), leaks, refused requests, foreign resources
  touched, orders, jobs, simulated seconds;
- `.seed_foreign(owner=, vpc_name=, subnet_name=, sg_name=, cluster_name=, compute_nodes=,
  vpc_id=)`: another stack's resources in the same account (seed.py); returns their ids;
- `.calls()`, `.rename(cluster_uuid, name)`, `.release(kind, id)`, `.reset()`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import requests

ROOT = Path(__file__).resolve().parents[3]
AK, SK = "emu-access-key-0001", "emu-secret-key-0001"


class EmulatorProcess:
    def __init__(self, job_seconds: float = 0.3, ak: str = AK, sk: str = SK):
        self.ak, self.sk, self.job_seconds = ak, sk, job_seconds
        self.proc: Optional[subprocess.Popen] = None
        self.url = ""

    def start(self) -> "EmulatorProcess":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.emulators.ctyun", "--port", "0", "--credentials",
             f"{self.ak}:{self.sk}", "--job-seconds", str(self.job_seconds)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"CTyun emulator did not start: {line!r} {err[-2000:]}")
        self.url = line.split()[-1]
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc is not None:
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream:
                    stream.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def env(self) -> Dict[str, str]:
        """Environment for a process that should talk to this emulator."""
        return {"CTYUN_AK": self.ak, "CTYUN_SK": self.sk, "CTYUN_ENDPOINT": self.url}

    # -- admin ------------------------------------------------------------------------
    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        r = requests.request(method, f"{self.url}/_admin/{path}", json=body, timeout=10)
        if r.status_code >= 400:
            raise RuntimeError(f"emulator admin {path}: {r.status_code} {r.text}")
        return r.json()

    def inventory(self) -> Dict[str, Any]:
        return self._admin("GET", "inventory")

    def report(self) -> Dict[str, Any]:
        return self._admin("GET", "report")

    def calls(self) -> Dict[str, int]:
        return self._admin("GET", "calls")

    def settings(self, **values) -> Dict[str, Any]:
        return self._admin("POST", "settings", values)

    def faults(self, *faults: Dict[str, Any]) -> None:
        self._admin("POST", "faults", {"faults": list(faults)})

    ALIASES = {"vpc": "vpc_name", "subnet": "subnet_name", "security_group": "sg_name",
               "cluster": "cluster_name"}

    def seed_foreign(self, **kw) -> Dict[str, Any]:
        """Another stack's VPC/subnet/group/cluster (seed.py); `vpc=`, `subnet=`,
        `security_group=`, `cluster=` are accepted for the *_name arguments."""
        kw = {self.ALIASES.get(k, k): v for k, v in kw.items()}
        return self._admin("POST", "seed_foreign", kw)

    def rename(self, cluster_uuid: str, name: str) -> None:
        self._admin("POST", "rename", {"clusterUUID": cluster_uuid, "clusterName": name})

    def release(self, kind: str, rid: str) -> None:
        """Release an EIP (`kind="eip"`) or file system (`"fs"`) as an operator would."""
        self._admin("POST", "release", {"kind": kind, "id": rid})

    def reset(self) -> None:
        self._admin("POST", "reset", {})
