"""The master's front checks the API key itself (ctyun_hcc/router_service.py with `apiKey`):
over the real local sshd, under the restart loop as uid 65534, the key read from its root-only
file (router/host.py key_file), never in the router directory (the shared file system) nor on
a command line; gone after delete. The replicas here are doubles without a key, so a 401 can
only come from the front."""

import os
import stat
import sys
from pathlib import Path

from components.ctyun_hcc.router_service import RouterServiceProvider
from components.router import host
from tests.doubles.router_rig import free_port, get, post
from tests.doubles.vllm_openai import DoubleConfig, VllmOpenAIDouble
from tests.integration.slurm_env import host_key, ssh_props

KEY = "kk3-ctyun-front-key-0123456789abcdefXYZ"
CHAT = {"model": "Kimi-K3", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}


def test_the_masters_front_checks_the_key_from_its_root_only_file(services, workspace):
    replica = VllmOpenAIDouble(DoubleConfig(enable_scale_out=True), port=free_port()).start()
    d, port, job = workspace / "router", free_port(), "kk3-sec-key"
    props = ssh_props(services, hostKey=host_key(services), routerDir=str(d), jobName=job,
                      workerUrls=[f"http://127.0.0.1:{replica.port}"], port=port,
                      routerPort=free_port(), metricsPort=free_port(), python=sys.executable,
                      restartS=0, startupTimeoutS=30, readyTimeoutS=60, pollIntervalS=0.2,
                      apiKey=KEY)
    prov = RouterServiceProvider()
    key_file = Path(host.key_file(job))
    created = prov.create(props)
    try:
        front = f"http://127.0.0.1:{port}"
        assert post(front + "/v1/chat/completions", CHAT)[0] == 401
        assert replica.chat_requests == 0
        assert post(front + "/v1/chat/completions", CHAT,
                    headers={"Authorization": f"Bearer {KEY}"})[0] == 200
        assert get(front + "/health")[0] == 200
        mode = key_file.stat()
        assert stat.S_IMODE(mode.st_mode) == 0o600 and mode.st_uid == 0
        assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(key_file.parent.parent.stat().st_mode) & 0o055 == 0o055
        assert not any(KEY in p.read_text(errors="replace") for p in d.rglob("*") if p.is_file()
                       and "site" not in p.relative_to(d).parts)
        pid = int((d / "front.child").read_text())
        assert KEY.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    finally:
        prov.delete("id", created.outs)
        replica.stop()
    assert not key_file.exists()
    assert os.path.isdir(key_file.parent)
