"""The seed's hand steps after the cluster exists, as idempotent dynamic resources (module ctyun).

Each step runs on the master over SSH (see ssh_resource.py for the shared plumbing) and can be
re-run after a failure half-way: `apply` first looks at what is there and only does what is
missing, and every step verifies its result before reporting success.

- `HostKeyPin`: first contact with the master: pins its host key (and the bastion's), then
  installs the stack's own generated login key; its outputs `hostKey`/`bastionHostKey` are the
  pins every other step verifies (a changed key fails them all) and `loginKey` (secret) is how
  they log in: the root password is used once, by this step only.
- `MasterInQueue`: the seed's `launcher` commands that put the master node into the Slurm
  partition, when the plan needs the master as a compute node; verified with `sinfo`.
- `NvmeMount`: runs the rendered `mount_nvme.sh` on every serving node (one node at a time via
  `srun -w`): never formats a disk that holds anything, persists mounts by UUID.
- `ModelWeights`: `cthpc model install` or `modelscope download` (both resume), then checks the
  checkpoint is complete (config.json, every shard the index names, no partial files).
- `SifImage`: `cthpc apptainer install` or a resumable download; checks the SIF header.
- `Broadcast`: the seed's bcast sbatch job (rendered `bcast.sh`); awaits the job id and fails
  with the job's log tail; the job itself compares bytes on every node with the source.

Deleting a step leaves data in place (weights, images, mounts, queue membership): they live on
the cluster's own disks and go with the cluster; `pulumi destroy` removes the service first.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

import pulumi
import pulumi.dynamic

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from .slurm_jobs import JobFailed, log_tail, partition_nodes, submit, wait_done
from .ssh import (HostKeyChanged, SshRunner, credentials_from_props, fingerprint,
                  generate_login_key, key_matches, target_from_props)
from .ssh_resource import SECRET_OUTPUTS, SSH_INPUTS, SshStepProvider, poll

log = redacted_logger("kimi_k3.ctyun.bootstrap")

SEED_LAUNCHER_CONF = "/usr/local/galaxy/cluster/default/galaxy-launcher/etc/launcher.conf"


def _q(s: Any) -> str:
    """One shell word (the project's one shell quoting function)."""
    return shell_word(s)


# ---- HostKeyPin ----------------------------------------------------------------------------------
#: where the stack's login key goes on the master (sshd's default AuthorizedKeysFile)
AUTHORIZED_KEYS = ".ssh/authorized_keys"


class HostKeyPinProvider(SshStepProvider):
    """First contact with the master: pin the host keys, then install the stack's own login key.

    Inputs besides SSH_INPUTS: `pinnedHostKey` / `pinnedBastionHostKey` (from
    kimi-k3:sshHostKey / sshBastionHostKey; "" = accept the key shown at first contact) and
    `loginKeyComment`. Outputs: `hostKey`, `bastionHostKey` (what every later connection must
    see), `hostKeyFingerprint`, `loginKey` (a generated ed25519 private key, secret) and
    `loginPublicKey` (the line appended to the login user's ~/.ssh/authorized_keys).

    The password (or the user's own key) is used once, here, and only after the host key
    check passed; every other step, and this one after creation, logs in with `loginKey`.
    """

    STEP_INPUTS = {"pinnedHostKey": "", "pinnedBastionHostKey": "", "loginKeyComment": "kimi-k3"}
    #: the pins are outputs: an input hostKey (always empty) must not re-pin silently
    IGNORED_KEYS = ("hostKey", "bastionHostKey")
    REPLACE_KEYS = ("sshHost", "sshPort", "sshUser")
    #: the stack's generated login key (an output, secret)
    SECRET_INPUTS = ("loginKey",)

    def _pins(self, p, olds=None):
        """(master pin, bastion pin): state first (verified from then on), then config."""
        olds = olds or {}
        master = olds.get("hostKey") or p.get("pinnedHostKey") or ""
        if p.get("pinnedHostKey") and olds.get("hostKey") and \
                not key_matches(p["pinnedHostKey"], olds["hostKey"]):
            raise HostKeyChanged(f"kimi-k3:sshHostKey ({fingerprint(p['pinnedHostKey'])}) is not "
                                 f"the key pinned at first contact ({fingerprint(olds['hostKey'])})")
        same_bastion = olds.get("sshBastion", "") == p.get("sshBastion", "")
        bastion = (olds.get("bastionHostKey") if same_bastion else "") or \
            p.get("pinnedBastionHostKey") or ""
        return master, bastion

    def _connect(self, p, host_key, bastion_key, creds: Dict[str, Any]) -> SshRunner:
        props = {**p, "hostKey": host_key, "bastionHostKey": bastion_key, **creds}
        return SshRunner(target_from_props(props), credentials_from_props(props),
                         redact=[v for v in creds.values() if v])

    def _install(self, runner: SshRunner, public_line: str) -> None:
        runner.run(f"umask 077; mkdir -p ~/.ssh; f=~/{AUTHORIZED_KEYS}; touch \"$f\"; "
                   "read -r line; grep -qxF \"$line\" \"$f\" || printf '%s\\n' \"$line\" >> \"$f\"",
                   stdin=public_line + "\n", label="install the stack's login key")

    def _verify(self, p, host_key, bastion_key, login_key) -> SshRunner:
        """Log in with `login_key` alone (no password), host keys pinned."""
        runner = self._connect(p, host_key, bastion_key, {
            "sshPrivateKey": login_key, "sshPassword": ""})
        with runner:
            runner.run("true", label="log in with the stack's key")
        return runner

    def _outputs(self, runner_or_keys, login_key, public_line):
        host_key, bastion_key = runner_or_keys
        return {"hostKey": host_key, "bastionHostKey": bastion_key or "",
                "hostKeyFingerprint": fingerprint(host_key), "loginKey": login_key,
                "loginPublicKey": public_line}

    def create(self, props):
        p = self.inputs(props)
        master_pin, bastion_pin = self._pins(p)
        first = self._connect(p, master_pin, bastion_pin, {
            "sshPrivateKey": p["sshPrivateKey"], "sshPassword": p["sshPassword"]})
        login_key, public_line = generate_login_key(p["loginKeyComment"])
        with first:  # raises HostKeyChanged before any credential is sent when a pin differs
            self._install(first, public_line)
        log.info("pinned %s (%s); installed the stack's login key", p["sshHost"],
                 fingerprint(first.host_key))
        self._verify(p, first.host_key, first.bastion_host_key, login_key)
        outs = self._outputs((first.host_key, first.bastion_host_key), login_key, public_line)
        return pulumi.dynamic.CreateResult(self.resource_id(p, outs), {**p, **outs})

    def _refresh(self, p, olds):
        master_pin, bastion_pin = self._pins(p, olds)
        login_key, public_line = olds.get("loginKey"), olds.get("loginPublicKey")
        if not login_key:  # state from before the stack had its own key: install one now
            first = self._connect(p, master_pin, bastion_pin, {
                "sshPrivateKey": p["sshPrivateKey"], "sshPassword": p["sshPassword"]})
            login_key, public_line = generate_login_key(p["loginKeyComment"])
            with first:
                self._install(first, public_line)
        runner = self._verify(p, master_pin, bastion_pin, login_key)
        return self._outputs((runner.host_key, runner.bastion_host_key), login_key, public_line)

    def update(self, id_, olds, news):
        p = self.inputs(news)
        outs = self._refresh(p, olds)  # verifies the old pins: a changed key fails here
        return pulumi.dynamic.UpdateResult({**p, **outs})

    def read(self, id_, props):
        p = self.inputs(props)
        outs = self._refresh(p, props)
        return pulumi.dynamic.ReadResult(id_, {**p, **outs})

    def delete(self, id_, props):
        """Remove the stack's key line (only that line) from the master; the cluster may be
        going away anyway, so an unreachable master is reported, not fatal."""
        p = self.inputs(props)
        line = props.get("loginPublicKey")
        if not (line and props.get("loginKey")):
            return
        try:
            runner = self._connect(p, props.get("hostKey") or "", props.get("bastionHostKey") or "",
                                   {"sshPrivateKey": props["loginKey"], "sshPassword": ""})
            with runner:
                runner.run(f"f=~/{AUTHORIZED_KEYS}; [ -f \"$f\" ] || exit 0; read -r line; "
                           "grep -vxF \"$line\" \"$f\" > \"$f.kk3tmp\" || true; "
                           "cat \"$f.kk3tmp\" > \"$f\"; rm -f \"$f.kk3tmp\"",
                           stdin=line + "\n", label="remove the stack's login key")
        except HostKeyChanged:
            raise
        except Exception as e:  # noqa: BLE001 an unreachable master must not block destroy
            log.warning("could not remove the stack's login key from %s: %s", p["sshHost"], e)


# ---- MasterInQueue -------------------------------------------------------------------------------
class MasterInQueueProvider(SshStepProvider):
    STEP_INPUTS = {"nodeName": "", "queueName": "batch", "launcherConf": SEED_LAUNCHER_CONF,
                   "timeoutS": 600, "pollIntervalS": 5}
    REPLACE_KEYS = ("nodeName", "queueName")

    def _in_queue(self, runner, p) -> bool:
        return p["nodeName"] in partition_nodes(runner, p["queueName"])

    def apply(self, runner, p):
        if self._in_queue(runner, p):
            return {"inQueue": True, "changed": False}
        conf = _q(p["launcherConf"])
        runner.run(f"test -f {conf} || {{ echo launcher config {conf} not found >&2;"
                   f" exit 1; }}; sed -i 's/^\\s*noderole\\s*=.*/NodeRole=server,execute/I' {conf}",
                   label="launcher.conf NodeRole=server,execute")
        for cmd in ("launcher resource setup_scheduler",
                    f"launcher resource add_node --node_name {_q(p['nodeName'])} "
                    f"--queue_name {_q(p['queueName'])}"):
            out = runner.run(cmd, label=cmd.split(" --")[0]).stdout
            if '"success": true' not in out.replace("'", '"').lower():
                raise RuntimeError(f"`{cmd}` did not report success: {out.strip()}")
        poll(f"{p['nodeName']} in partition {p['queueName']}", lambda: self._in_queue(runner, p),
             time.monotonic() + float(p["timeoutS"]), float(p["pollIntervalS"]))
        return {"inQueue": True, "changed": True}

    def observe(self, runner, p):
        return {"inQueue": self._in_queue(runner, p)}


# ---- NvmeMount -----------------------------------------------------------------------------------
class NvmeMountProvider(SshStepProvider):
    STEP_INPUTS = {"script": "", "workDir": "/home/kimi-k3", "partition": "batch", "nodes": [],
                   "fstab": "", "timeoutS": 1800}
    REPLACE_KEYS = ()

    def apply(self, runner, p):
        wd = p["workDir"]
        runner.upload(f"{wd}/mount_nvme.sh", p["script"], 0o755)
        nodes: List[str] = list(p["nodes"]) or partition_nodes(runner, p["partition"])
        env = f"FSTAB={_q(p['fstab'])} " if p.get("fstab") else ""
        # one node at a time: a node's failure stops the rest and is reported with its output;
        # --immediate: if the nodes are busy (a serving job holds them) fail in 2 min, not hang
        outs = []
        for node in nodes:
            res = runner.run(
                f"{env}srun -p {_q(p['partition'])} -N 1 -n 1 -w {_q(node)} --time=30 --immediate=120 "
                f"{_q(wd + '/mount_nvme.sh')} 2>&1", timeout_s=float(p["timeoutS"]),
                label=f"mount_nvme.sh on {node}")
            outs.append(f"{node}: " + res.stdout.strip().replace("\n", "; "))
        return {"mounted": nodes, "report": outs}

    def observe(self, runner, p):
        return {}


# ---- ModelWeights --------------------------------------------------------------------------------
VERIFY_CHECKPOINT = r"""
d={dir}
[ -f "$d/config.json" ] || {{ echo "missing $d/config.json"; exit 3; }}
if find "$d" -name '*.part' -o -name '*.incomplete' -o -name '*.tmp' | grep -q .; then
  echo "partial files left in $d"; exit 3
fi
for idx in "$d"/*.index.json; do
  [ -f "$idx" ] || continue
  for shard in $(grep -o '"[^"]*\.safetensors"' "$idx" | tr -d '"' | sort -u); do
    [ -s "$d/$shard" ] || {{ echo "missing shard $shard"; exit 3; }}
  done
done
echo "bytes $(du -sb "$d" | awk '{{print $1}}') files $(find "$d" -type f | wc -l)"
"""


class ModelWeightsProvider(SshStepProvider):
    PROGRESS_PHASE = "weights-stage"  # progress: the plan's stage figure applies
    PROGRESS_WAITING = "{source} install of {modelName} on the cluster"
    STEP_INPUTS = {"source": "cthpc", "modelName": "Kimi-K3-w4a8",
                   "repo": "Eco-Tech/Kimi-K3-w4a8", "modelRoot": "/mnt/nvme1n1/model",
                   "installTimeoutS": 14400}
    REPLACE_KEYS = ("source", "modelName", "repo", "modelRoot")

    def _dir(self, p) -> str:
        return f"{p['modelRoot'].rstrip('/')}/{p['modelName']}"

    def _verify(self, runner, p):
        res = runner.run(VERIFY_CHECKPOINT.format(dir=_q(self._dir(p))), check=False,
                         label="verify checkpoint")
        if res.code != 0:
            return None
        words = res.stdout.split()
        return {"path": self._dir(p), "bytes": int(words[1]), "files": int(words[3])}

    def apply(self, runner, p):
        done = self._verify(runner, p)
        if done:
            return {**done, "installed": False}
        root, d = _q(p["modelRoot"]), _q(self._dir(p))
        if p["source"] == "cthpc":
            cmd = (f"mkdir -p {root} && cthpc model makecache && "
                   f"cthpc model install {_q(p['modelName'])} --dir {root}/")
        elif p["source"] == "modelscope":
            cmd = ("command -v modelscope >/dev/null || { echo 'modelscope CLI not found on the "
                   "master: pip install modelscope, or use kimi-k3:modelSource=cthpc' >&2; exit 1; }; "
                   f"mkdir -p {d} && modelscope download --model {_q(p['repo'])} --local_dir {d}")
        else:
            raise ValueError(f"source={p['source']!r}: use cthpc or modelscope")
        runner.run(cmd, timeout_s=float(p["installTimeoutS"]), label=f"{p['source']} install")
        done = self._verify(runner, p)
        if not done:
            res = runner.run(VERIFY_CHECKPOINT.format(dir=d), check=False, label="verify")
            raise RuntimeError(f"{self._dir(p)} is incomplete after install: {res.stdout.strip()}")
        return {**done, "installed": True}

    def observe(self, runner, p):
        return self._verify(runner, p) or {"path": self._dir(p), "bytes": 0, "files": 0}


# ---- SifImage ------------------------------------------------------------------------------------
SIF_CHECK = "f={f}; [ -s \"$f\" ] && [ \"$(dd if=\"$f\" bs=1 skip=32 count=9 2>/dev/null)\" = SIF_MAGIC ] " \
            "&& stat -c %s \"$f\""


class SifImageProvider(SshStepProvider):
    STEP_INPUTS = {"source": "cthpc", "name": "vllm-ascend_kimi-k3-a3",
                   "sifDir": "/mnt/nvme0n1/apptainer", "url": "", "installTimeoutS": 3600}
    REPLACE_KEYS = ("source", "name", "sifDir", "url")

    def _file(self, p) -> str:
        return f"{p['sifDir'].rstrip('/')}/{p['name']}.sif"

    def _verify(self, runner, p):
        res = runner.run(SIF_CHECK.format(f=_q(self._file(p))), check=False, label="verify SIF")
        return {"path": self._file(p), "bytes": int(res.stdout.strip())} if res.code == 0 else None

    def apply(self, runner, p):
        done = self._verify(runner, p)
        if done:
            return {**done, "installed": False}
        sif_dir = _q(p["sifDir"])
        if p["source"] == "cthpc":
            cmd = (f"mkdir -p {sif_dir} && cthpc apptainer makecache && "
                   f"cthpc apptainer install {_q(p['name'])} --dir {sif_dir}/")
        elif p["source"] == "url":
            # download next to the target and rename once verified: a partial file never has
            # the final name, and -c resumes it on the next run
            part = _q(self._file(p) + ".part")
            cmd = (f"mkdir -p {sif_dir} && wget -q -c -O {part} {_q(p['url'])} && "
                   f"mv -f {part} {_q(self._file(p))}")
        else:
            raise ValueError(f"source={p['source']!r}: use cthpc or url")
        runner.run(cmd, timeout_s=float(p["installTimeoutS"]), label=f"{p['source']} SIF install")
        done = self._verify(runner, p)
        if not done:
            raise RuntimeError(f"{self._file(p)} is not a SIF image after install")
        return {**done, "installed": True}

    def observe(self, runner, p):
        return self._verify(runner, p) or {"path": self._file(p), "bytes": 0}


# ---- Broadcast -----------------------------------------------------------------------------------
class BroadcastProvider(SshStepProvider):
    PROGRESS_PHASE = "weights-broadcast"  # progress
    PROGRESS_WAITING = "the bcast job copying the weights from {sourceHost} to every node"
    STEP_INPUTS = {"script": "", "workDir": "/home/kimi-k3", "sourceHost": "",
                   "contentKey": "", "timeoutS": 7200, "pollIntervalS": 10}
    #: new content (weights or image changed) means broadcasting again
    REPLACE_KEYS = ()

    def apply(self, runner, p):
        wd = p["workDir"]
        runner.run(f"mkdir -p {_q(wd)}/logs", label="mkdir work dir")
        runner.upload(f"{wd}/bcast.sh", p["script"], 0o755)
        export = {"BCAST_SOURCE": p["sourceHost"]} if p.get("sourceHost") else None
        job_id = submit(runner, wd, "bcast.sh", export=export)
        log.info("broadcast job %s submitted", job_id)
        info = wait_done(runner, job_id, time.monotonic() + float(p["timeoutS"]),
                         float(p["pollIntervalS"]))
        if info.state != "COMPLETED":
            ok = runner.run(f"grep -q '^broadcast complete' {_q(wd)}/logs/bcast_{job_id}.out",
                            check=False, label="bcast result").code == 0
            if not (info.state == "GONE" and ok):
                tail = log_tail(runner, f"{wd}/logs", [f"bcast_{job_id}*"])
                raise JobFailed(f"broadcast job {job_id} ended {info.state}; log tail:\n{tail}")
        return {"jobId": job_id}

    def observe(self, runner, p):
        return {}


# ---- resources ---------------------------------------------------------------------------------
def _resource(provider_cls, type_name: str, output_names: List[str]):
    class _Step(pulumi.dynamic.Resource, module="ctyun", name=type_name):
        def __init__(self, resource_name: str, inputs: Dict[str, Any],
                     opts: Optional[pulumi.ResourceOptions] = None):
            keys = {**SSH_INPUTS, **provider_cls.STEP_INPUTS}
            props = {**{k: None for k in keys}, **inputs, **{k: None for k in output_names}}
            opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                additional_secret_outputs=SECRET_OUTPUTS + ["loginKey"]))
            super().__init__(provider_cls(), resource_name, props, opts)

    _Step.__name__ = _Step.__qualname__ = type_name
    _Step.__doc__ = provider_cls.__doc__ or f"{type_name} (see components/ctyun_hcc/bootstrap.py)"
    return _Step


HostKeyPin = _resource(HostKeyPinProvider, "HostKeyPin",
                       ["hostKey", "bastionHostKey", "hostKeyFingerprint", "loginKey",
                        "loginPublicKey"])
MasterInQueue = _resource(MasterInQueueProvider, "MasterInQueue", ["inQueue", "changed"])
NvmeMount = _resource(NvmeMountProvider, "NvmeMount", ["mounted", "report"])
ModelWeights = _resource(ModelWeightsProvider, "ModelWeights",
                         ["path", "bytes", "files", "installed"])
SifImage = _resource(SifImageProvider, "SifImage", ["path", "bytes", "installed"])
Broadcast = _resource(BroadcastProvider, "Broadcast", ["jobId"])
