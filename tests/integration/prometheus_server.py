"""A real Prometheus server for the tests: Debian's `prometheus` (2.42 in bookworm), started on a
loopback port with its data in a temporary directory, stopped (and waited for) at the end.

.ci/services/start.sh installs the package; a test that needs it fails with that hint when the
binary is missing (tests never skip for something missing).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List

import httpx
import yaml

HINT = "install Debian's prometheus package (.ci/services/start.sh does, as root)"


def binary(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} not found: {HINT}"
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """`with Prometheus(tmp_path, config) as p: p.query(expr)`."""

    def __init__(self, workdir: Path, config: Dict[str, Any], files: Dict[str, str] = None):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        for name, text in (files or {}).items():
            (self.dir / name).write_text(text)
        (self.dir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.dir / "prometheus.log"
        self.proc = None
        self.http = httpx.Client(timeout=10)

    def __enter__(self) -> "Prometheus":
        check = subprocess.run([binary("promtool"), "check", "config", "prometheus.yml"],
                               cwd=self.dir, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        self.proc = subprocess.Popen(
            [binary("prometheus"), "--config.file=prometheus.yml",
             f"--storage.tsdb.path={self.dir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            cwd=self.dir, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited: {self.log.read_text()[-2000:]}"
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise AssertionError(f"prometheus not ready in 30 s: {self.log.read_text()[-2000:]}")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.http.close()

    def query(self, expr: str) -> List[Dict[str, Any]]:
        r = self.http.get(f"{self.url}/api/v1/query", params={"query": expr})
        body = r.json()
        assert r.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
        return body["data"]["result"]

    def targets_up(self, count: int, timeout_s: float = 30) -> None:
        """Until `count` targets have been scraped successfully at least once."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            r = httpx.get(f"{self.url}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
            if sum(t["health"] == "up" for t in r) >= count:
                return
            time.sleep(0.3)
        raise AssertionError(f"targets not up: {r}")

    def scrapes(self, n: int, interval_s: float) -> None:
        """Let `n` more scrape intervals pass."""
        time.sleep(n * interval_s + 0.2)
