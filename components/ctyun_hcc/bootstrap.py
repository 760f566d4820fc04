"""The seed's hand steps after the cluster exists, as idempotent dynamic resources (module ctyun).

Each step runs on the master over SSH (see ssh_resource.py for the shared plumbing) and can be
re-run after a failure half-way: `apply` first looks at what is there and only does what is
missing, and every step verifies its result before reporting success.

- `HostKeyPin`: first contact with the master: pins its host key (and the bastion's), then
  installs the stack's own generated login key; its outputs `hostKey`/`bastionHostKey` are the
  pins every other step verifies (a changed key fails them all) and `loginKey` (secret) is how
  they log in: the root password is used once, by this step only, and with `passwordLogin=off`
  sshd refuses it from then on (password_login.py; destroy switches it back on).
- `MasterInQueue`: the seed's `launcher` commands that put the master node into the Slurm
  partition, when the plan needs the master as a compute node; verified with `sinfo`.
- `NvmeMount`: runs the rendered `mount_nvme.sh` on every serving node not done yet (one node
  at a time via `srun -w`): never formats a disk that holds anything, persists mounts by UUID.
- `ModelWeights`: `cthpc model install`, falling back by itself to `modelscope download` (the
  CLI installed into its own venv when missing; fetch_commands.py), then checks the checkpoint
  is complete (config.json, every shard the index names, no partial files).
- `SifImage`: `cthpc apptainer install`, falling back by itself to the https download (default:
  the seed's ZOS URL), the sha256 checked before first use when one is configured; checks the
  SIF header.
- `Broadcast`: to the nodes that do not hold the files yet: the seed's bcast sbatch job
  (`cthpc_model_bcast`) where the master has it, else parallel copies from the master; both
  compare bytes on every node with the source; a failure comes with the log tail.

A step that needs a node this stack's serving job holds stops the service first (resize.py);
the service reports the downtime when it answers again. Deleting a step leaves data in place
(weights, images, mounts, queue membership): they live on the cluster's own disks and go with
the cluster, so those deletes do not even connect (an unreachable master never blocks a
destroy); `pulumi destroy` removes the service first.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List

import pulumi
import pulumi.dynamic

from ..dynamic.provider import redacted_logger
from ..inference.quoting import shell_word
from .fetch_commands import MODELSCOPE_PIP, MODELSCOPE_VENV, REVISION_MARK, SEED_PIP_INDEX, \
    SEED_SIF_URL, \
    check_url, cthpc_model_command, cthpc_sif_command, modelscope_command, sha256_check_command, \
    sif_download_command
from .password_login import DEFAULT_SSHD_CONFIG, MODES as PASSWORD_MODES, off_command, \
    on_command, state_command
from .resize import ServiceJobs, StopsTheService, stop_service_for
from .slurm_jobs import JobFailed, log_tail, partition_nodes, submit, wait_done
from .reach import MasterUnreachable
from .ssh import (CommandFailed, HostKeyChanged, SshError, SshRunner, remote_errors,
                  credentials_from_props, fingerprint, generate_login_key, key_matches,
                  target_from_props)
from .ssh_resource import SshStepProvider, step_resource, poll

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

    STEP_INPUTS = {"pinnedHostKey": "", "pinnedBastionHostKey": "", "loginKeyComment": "kimi-k3",
                   # `off`: once the stack's key works, sshd refuses passwords for the SSH user
                   # (password_login.py; the program passes kimi-k3:sshPasswordLogin, default
                   # off); `keep` leaves sshd as it is. Destroy undoes `off`.
                   "passwordLogin": "keep", "sshdConfig": DEFAULT_SSHD_CONFIG}
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
        """A connected runner (an unreachable master: one line, SshStepProvider._reach_master)."""
        props = {**p, "hostKey": host_key, "bastionHostKey": bastion_key, **creds}
        runner = SshRunner(target_from_props(props), credentials_from_props(props),
                           redact=[v for v in creds.values() if v])
        self._reach_master(runner, props)
        return runner

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
        outs["passwordLoginState"] = self._password_login(p, outs, "on")
        return pulumi.dynamic.CreateResult(self.resource_id(p, outs), {**p, **outs})

    def _password_login(self, p, outs, was: str) -> str:
        """Make password login what `passwordLogin` asks (`off`, or `keep` = as E-HPC set it);
        returns `off` or `on`. `was`: what this stack left last time."""
        mode = p.get("passwordLogin") or "keep"
        if mode not in PASSWORD_MODES:
            raise ValueError(f"passwordLogin={mode!r}: use off or keep")
        if mode == "keep" and was != "off":
            return "on"  # nothing of ours to undo: no connection
        runner = self._connect(p, outs["hostKey"], outs["bastionHostKey"],
                               {"sshPrivateKey": outs["loginKey"], "sshPassword": ""})
        owner, config = p["loginKeyComment"], p["sshdConfig"]
        with runner:
            if mode == "keep":
                runner.run(on_command(owner, config), label="switch password login back on")
                return "on"
            runner.run(off_command(p["sshUser"], owner, config),
                       label="switch password login off")
        # after sshd's reload: the stack's key still logs in, and a password no longer does
        self._after_reload(lambda: self._verify(p, outs["hostKey"], outs["bastionHostKey"],
                                                outs["loginKey"]))
        if p.get("sshPassword"):
            try:
                with self._connect(p, outs["hostKey"], outs["bastionHostKey"],
                                   {"sshPrivateKey": "", "sshPassword": p["sshPassword"]}) as pw:
                    pw.run("true", label="password login (must be refused)")
            except SshError as e:
                if "refused" not in str(e):
                    raise
            else:
                raise RuntimeError(f"{p['sshHost']} still accepts {p['sshUser']}'s password "
                                   f"after {config} was changed; check the sshd running there")
        log.info("password login for %s on %s is off", p["sshUser"], p["sshHost"])
        return "off"

    #: how long sshd may take to listen again after the reload
    RELOAD_WAIT_S = 15.0

    def _after_reload(self, verify, sleep=time.sleep, clock=time.monotonic):
        """`verify()` once sshd listens again: on SIGHUP sshd(8) re-executes itself, and for
        that moment its port refuses connections (seen on the test sshd: ConnectionRefusedError
        on the first connect after the reload). Anything else, or a port still closed after
        RELOAD_WAIT_S, is raised."""
        end = clock() + self.RELOAD_WAIT_S
        while True:
            try:
                return verify()
            except (ConnectionRefusedError, EOFError, MasterUnreachable) as e:
                closed = getattr(e, "cause", e)  # the connect's own error (reach.py)
                if clock() > end or not isinstance(closed, (ConnectionRefusedError, EOFError)):
                    raise
                sleep(0.1)

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
        outs["passwordLoginState"] = self._password_login(
            p, outs, olds.get("passwordLoginState") or "on")
        return pulumi.dynamic.UpdateResult({**p, **outs})

    def read(self, id_, props):
        p = self.inputs(props)
        try:
            outs = self._refresh(p, props)
        except MasterUnreachable as e:  # kept: see SshStepProvider.read
            log.warning("refresh of %s kept as recorded: %s", id_, e)
            return pulumi.dynamic.ReadResult(id_, props)
        runner = self._connect(p, outs["hostKey"], outs["bastionHostKey"],
                               {"sshPrivateKey": outs["loginKey"], "sshPassword": ""})
        with runner:
            outs["passwordLoginState"] = runner.run(
                state_command(p["loginKeyComment"], p["sshdConfig"]),
                label="password login state").stdout.strip() or "on"
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
                if props.get("passwordLoginState") == "off":  # as E-HPC left it, before the key goes
                    runner.run(on_command(p["loginKeyComment"], p["sshdConfig"]),
                               label="switch password login back on")
                runner.run(f"f=~/{AUTHORIZED_KEYS}; [ -f \"$f\" ] || exit 0; read -r line; "
                           "grep -vxF \"$line\" \"$f\" > \"$f.kk3tmp\" || true; "
                           "cat \"$f.kk3tmp\" > \"$f\"; rm -f \"$f.kk3tmp\"",
                           stdin=line + "\n", label="remove the stack's login key")
        except remote_errors() as e:  # unreachable, or a changed host key (nothing was sent):
            # the line goes with the cluster, so this must not block the destroy on its way there
            log.warning("could not remove the stack's login key from %s (%s: %s); it stays in "
                        "~/%s there until the cluster is deleted%s", p["sshHost"],
                        type(e).__name__, e, AUTHORIZED_KEYS,
                        ", and so does the sshd block that refuses passwords"
                        if props.get("passwordLoginState") == "off" else "")


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
#: what the steps that need nodes know about the service, to stop it first (resize.py)
SERVICE_INPUTS = {"serviceJobNames": ["kimi-k3"], "ownerTag": "", "stopTimeoutS": 300,
                  "pollIntervalS": 10}


class NvmeMountProvider(StopsTheService, SshStepProvider):
    STEP_INPUTS = {"script": "", "workDir": "/home/kimi-k3", "partition": "batch", "nodes": [],
                   "fstab": "", "timeoutS": 1800, **SERVICE_INPUTS}
    REPLACE_KEYS = ()
    NODES_DONE_OUTPUT = "mounted"
    #: a changed script or fstab means every node again; more nodes mean the new ones only
    REDO_KEYS = ("script", "fstab", "workDir", "partition")

    def apply(self, runner, p):
        wd = p["workDir"]
        nodes: List[str] = list(p["nodes"]) or partition_nodes(runner, p["partition"])
        done = set(p.get("nodesDone") or [])
        todo = [n for n in nodes if n not in done]
        if not todo:
            return {"mounted": nodes, "report": []}
        runner.upload(f"{wd}/mount_nvme.sh", p["script"], 0o755)
        # a node the service holds would make the step wait behind it: stop the service first
        stop_service_for(runner, ServiceJobs.of(p), todo, "the NVMe mount step",
                         time.monotonic() + float(p["stopTimeoutS"]), float(p["pollIntervalS"]))
        env = f"FSTAB={_q(p['fstab'])} " if p.get("fstab") else ""
        # one node at a time: a node's failure stops the rest and is reported with its output;
        # --immediate: if someone else's job holds the node, fail in 2 min, not hang
        outs = []
        for node in todo:
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
want={revision}
if [ -n "$want" ] && [ "$(cat "$d/{mark}" 2>/dev/null)" != "$want" ]; then
  echo "$d is not at revision $want"; exit 3
fi
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
    """The weights on the master: `source` cthpc (the seed's 方式一) falls back by itself, and
    says so, to ModelScope (方式二) when the master has no `cthpc` or cthpc failed before writing
    anything; `modelscope` uses ModelScope only. Output `via`: the source that was used."""

    PROGRESS_PHASE = "weights-stage"  # progress: the plan's stage figure applies
    PROGRESS_WAITING = "{source} install of {modelName} on the cluster"
    STEP_INPUTS = {"source": "cthpc", "modelName": "Kimi-K3-w4a8",
                   "repo": "Eco-Tech/Kimi-K3-w4a8", "modelRoot": "/mnt/nvme1n1/model",
                   "installTimeoutS": 14400, "modelscopePip": MODELSCOPE_PIP,
                   "pipIndexUrl": SEED_PIP_INDEX, "modelscopeVenv": MODELSCOPE_VENV,
                   # kimi-k3:modelRevision (modelscope only; "" = the repository's default)
                   "revision": ""}
    REPLACE_KEYS = ("source", "modelName", "repo", "modelRoot")

    def _dir(self, p) -> str:
        return f"{p['modelRoot'].rstrip('/')}/{p['modelName']}"

    def _check(self, p) -> str:
        """The checkpoint check, with the revision the directory must be at (modelscope)."""
        return VERIFY_CHECKPOINT.format(dir=_q(self._dir(p)), revision=_q(p.get("revision") or ""),
                                        mark=REVISION_MARK)

    def _verify(self, runner, p):
        res = runner.run(self._check(p), check=False,
                         label="verify checkpoint")
        if res.code != 0:
            return None
        words = res.stdout.split()
        return {"path": self._dir(p), "bytes": int(words[1]), "files": int(words[3])}

    def apply(self, runner, p):
        done = self._verify(runner, p)
        if done:
            return {**done, "installed": False, "via": "present"}
        if p["source"] not in ("cthpc", "modelscope"):
            raise ValueError(f"source={p['source']!r}: use cthpc or modelscope")
        via = "modelscope"
        if p["source"] == "cthpc":
            via = self._cthpc(runner, p)
        if via == "modelscope":
            try:
                runner.run(modelscope_command(p["repo"], self._dir(p), p["modelscopePip"],
                                              p["pipIndexUrl"], p["modelscopeVenv"],
                                              p.get("revision") or ""),
                           timeout_s=float(p["installTimeoutS"]), label="modelscope download")
            except CommandFailed as e:
                before = "cthpc was not usable on the master; " if p["source"] == "cthpc" else ""
                raise RuntimeError(
                    f"weights {p['repo']}: {before}the ModelScope download failed: {e}. Fix the "
                    "master's access to modelscope.cn (or PyPI for the CLI), or install cthpc "
                    "(the console edition 大模型精简版 has it) and run `pulumi up` again") from None
        done = self._verify(runner, p)
        if not done:
            res = runner.run(self._check(p), check=False,
                             label="verify")
            raise RuntimeError(f"{self._dir(p)} is incomplete after install: {res.stdout.strip()}")
        return {**done, "installed": True, "via": via}

    def _cthpc(self, runner, p) -> str:
        """Install with cthpc; "cthpc" when it did, "modelscope" when it cannot (no cthpc, or it
        failed before writing anything: nothing to resume). A failure half-way is raised: the
        next run resumes it with cthpc rather than mixing two tools' files."""
        if runner.run("command -v cthpc", check=False, label="command -v cthpc").code != 0:
            log.warning("weights: cthpc is not on the master (not the 大模型精简版 edition?): "
                        "falling back to `modelscope download %s` (the seed's 方式二; limited by the "
                        "EIP's bandwidth)", p["repo"])
            return "modelscope"
        res = runner.run(cthpc_model_command(p["modelRoot"], p["modelName"]), check=False,
                         timeout_s=float(p["installTimeoutS"]), label="cthpc install")
        if res.code == 0:
            return "cthpc"
        wrote = runner.run(f"[ -n \"$(ls -A {_q(self._dir(p))} 2>/dev/null)\" ]", check=False,
                           label="anything written?").code == 0
        if wrote:
            raise CommandFailed("cthpc install", res.code, res.stdout, res.stderr)
        log.warning("weights: `cthpc model install %s` failed before writing anything (%s): "
                    "falling back to `modelscope download %s`", p["modelName"],
                    (res.stderr or res.stdout).strip().splitlines()[-1:] or "", p["repo"])
        return "modelscope"

    def observe(self, runner, p):
        return self._verify(runner, p) or {"path": self._dir(p), "bytes": 0, "files": 0}


# ---- SifImage ------------------------------------------------------------------------------------
SIF_CHECK = "f={f}; [ -s \"$f\" ] && [ \"$(dd if=\"$f\" bs=1 skip=32 count=9 2>/dev/null)\" = SIF_MAGIC ] " \
            "&& stat -c %s \"$f\""


class SifImageProvider(SshStepProvider):
    """The SIF image on the master: `source` cthpc (the seed's 方式一) falls back by itself, and
    says so, to the download from `url` (default: the seed's ZOS address; https only) when the
    master has no `cthpc` or cthpc failed; `url` downloads only. With `sha256`, the image is
    checked before first use whatever its source, and a download only gets its final name once
    the sum matches. Output `via`: cthpc, url, or present."""

    STEP_INPUTS = {"source": "cthpc", "name": "vllm-ascend_kimi-k3-a3",
                   "sifDir": "/mnt/nvme0n1/apptainer", "url": SEED_SIF_URL, "sha256": "",
                   "installTimeoutS": 3600}
    REPLACE_KEYS = ("source", "name", "sifDir", "url", "sha256")

    def _file(self, p) -> str:
        return f"{p['sifDir'].rstrip('/')}/{p['name']}.sif"

    def _verify(self, runner, p):
        res = runner.run(SIF_CHECK.format(f=_q(self._file(p))), check=False, label="verify SIF")
        return {"path": self._file(p), "bytes": int(res.stdout.strip())} if res.code == 0 else None

    def _sum_ok(self, runner, p) -> bool:
        if not p.get("sha256"):
            return True
        res = runner.run(sha256_check_command(self._file(p), p["sha256"]), check=False,
                         timeout_s=float(p["installTimeoutS"]), label="sha256 of the SIF")
        if res.code != 0:
            log.warning("%s", res.stderr.strip())
        return res.code == 0

    def apply(self, runner, p):
        if p["source"] not in ("cthpc", "url"):
            raise ValueError(f"source={p['source']!r}: use cthpc or url")
        url = p.get("url") or SEED_SIF_URL
        check_url(url)  # before anything: a plain-http image is never fetched
        done = self._verify(runner, p)
        if done and self._sum_ok(runner, p):
            return {**done, "installed": False, "via": "present"}
        if done:  # the image there is not the pinned one: it is replaced, never used
            runner.run(f"rm -f {_q(self._file(p))}", label="remove the unpinned SIF")
        via = "url"
        if p["source"] == "cthpc":
            via = self._cthpc(runner, p, url)
        if via == "url":
            runner.run(sif_download_command(url, self._file(p), p.get("sha256") or ""),
                       timeout_s=float(p["installTimeoutS"]), label="download the SIF")
        done = self._verify(runner, p)
        if not done:
            raise RuntimeError(f"{self._file(p)} is not a SIF image after install ({via})")
        if not self._sum_ok(runner, p):
            raise RuntimeError(f"{self._file(p)} from {via} does not have the sha256 "
                               f"kimi-k3:sifSha256={p['sha256']}; it was not used")
        return {**done, "installed": True, "via": via}

    def _cthpc(self, runner, p, url: str) -> str:
        if runner.run("command -v cthpc", check=False, label="command -v cthpc").code != 0:
            log.warning("SIF: cthpc is not on the master (not the 大模型精简版 edition?): "
                        "falling back to the download from %s (the seed's 方式二)", url)
            return "url"
        res = runner.run(cthpc_sif_command(p["sifDir"], p["name"]), check=False,
                         timeout_s=float(p["installTimeoutS"]), label="cthpc SIF install")
        if res.code == 0:
            return "cthpc"
        log.warning("SIF: `cthpc apptainer install %s` failed (%s): falling back to the download "
                    "from %s", p["name"],
                    "; ".join((res.stderr or res.stdout).strip().splitlines()[-1:]), url)
        return "url"

    def observe(self, runner, p):
        return self._verify(runner, p) or {"path": self._file(p), "bytes": 0}


# ---- Broadcast -----------------------------------------------------------------------------------
class BroadcastProvider(StopsTheService, SshStepProvider):
    """The image and the weights from the master (`sourceHost`) to the serving `nodes`.

    `method`: `auto` (the default) asks the master (`bcast.sh --probe`): the seed's
    cthpc_model_bcast job where the resource pool has it, else parallel copies from the master
    over the cluster network (`bcast.sh --copy-all`), said as a warning; `cthpc_model_bcast` or
    `copy` force one. After a grow only the new nodes get the files (the nodes that serve have
    them: output `holding`); a changed content (`contentKey`) means every node again. The service
    is stopped first when the broadcast needs a node it holds (the job's source, or a target).
    The method a run used is the output `methodUsed` (`none` when no node needed the files): it
    was the output `method` before, which overwrote the input of that name in the state, so
    every later `pulumi up` with the default `auto` saw a changed REDO key and broadcast to
    every node again, stopping the service (found by the shrink test's second-up check).
    """

    PROGRESS_PHASE = "weights-broadcast"  # progress
    PROGRESS_WAITING = "the broadcast of the weights and the image from {sourceHost}"
    STEP_INPUTS = {"script": "", "workDir": "/home/kimi-k3", "sourceHost": "",
                   "contentKey": "", "timeoutS": 7200, "partition": "batch", "nodes": [],
                   "method": "auto", **SERVICE_INPUTS}
    REPLACE_KEYS = ()
    NODES_DONE_OUTPUT = "holding"
    #: new content, or another source or method: every node again
    REDO_KEYS = ("contentKey", "sourceHost", "script", "method")
    METHODS = ("auto", "cthpc_model_bcast", "copy")

    def apply(self, runner, p):
        wd = p["workDir"]
        if p["method"] not in self.METHODS:
            raise ValueError(f"method={p['method']!r}: use one of {', '.join(self.METHODS)}")
        runner.run(f"mkdir -p {_q(wd)}/logs", label="mkdir work dir")
        runner.upload(f"{wd}/bcast.sh", p["script"], 0o755)
        in_partition = partition_nodes(runner, p["partition"])
        nodes = list(p["nodes"]) or in_partition
        done = set(p.get("nodesDone") or [])
        targets = [n for n in nodes if n not in done and n != p.get("sourceHost")]
        if not targets:
            return {"holding": nodes, "jobId": "", "methodUsed": "none", "copied": []}
        method = p["method"]
        if method == "auto":
            probe = runner.run(f"bash {_q(wd + '/bcast.sh')} --probe", check=False,
                               label="bcast.sh --probe")
            for line in probe.stderr.strip().splitlines():
                log.warning("broadcast: %s", line)  # e.g. no /etc/profile.d/modules.sh
            method = "cthpc_model_bcast" if "method cthpc_model_bcast" in probe.stdout else "copy"
            if method == "copy":
                log.warning("broadcast: cthpc_model_bcast is not on the master (the seed: not "
                            "on every resource pool): copying from the master to %s over the "
                            "cluster network instead", ", ".join(targets))
        deadline = time.monotonic() + float(p["timeoutS"])
        if method == "copy":
            stop_service_for(runner, ServiceJobs.of(p), targets, "the broadcast", deadline,
                             float(p["pollIntervalS"]))
            runner.run(f"bash {_q(wd + '/bcast.sh')} --copy-all {' '.join(_q(n) for n in targets)}"
                       f" > {_q(wd + '/logs/bcast_copy.out')} 2>&1 || "
                       f"{{ rc=$?; tail -n 30 {_q(wd + '/logs/bcast_copy.out')} >&2; exit $rc; }}",
                       timeout_s=float(p["timeoutS"]), label="bcast.sh --copy-all")
            return {"holding": nodes, "jobId": "", "methodUsed": method, "copied": targets}
        # the seed's MPI broadcast: one job over the source (when it is a node of the
        # partition) and the targets
        job_nodes = targets + ([p["sourceHost"]] if p.get("sourceHost") in in_partition else [])
        stop_service_for(runner, ServiceJobs.of(p), job_nodes, "the broadcast", deadline,
                         float(p["pollIntervalS"]))
        export = {"BCAST_SOURCE": p["sourceHost"]} if p.get("sourceHost") else None
        job_id = submit(runner, wd, "bcast.sh", ("-N", str(len(job_nodes)), "-w",
                                                  ",".join(job_nodes)), export=export)
        log.info("broadcast job %s submitted", job_id)
        info = wait_done(runner, job_id, deadline, float(p["pollIntervalS"]))
        if info.state != "COMPLETED":
            ok = runner.run(f"grep -q '^broadcast complete' {_q(wd)}/logs/bcast_{job_id}.out",
                            check=False, label="bcast result").code == 0
            if not (info.state == "GONE" and ok):
                tail = log_tail(runner, f"{wd}/logs", [f"bcast_{job_id}*"])
                raise JobFailed(f"broadcast job {job_id} ended {info.state}; log tail:\n{tail}")
        return {"holding": nodes, "jobId": job_id, "methodUsed": method, "copied": targets}

    def upgrade(self, props):
        """A state an earlier release wrote (`holding` but no `methodUsed`) holds the method the
        step used under `method`, not the input: it becomes `methodUsed`, and the input is taken
        as the default `auto` (a forced method then reads as one change, once)."""
        p = super().upgrade(props)
        if "holding" in p and "methodUsed" not in p:
            p["methodUsed"] = p.pop("method", None)
        return p

    def observe(self, runner, p):
        return {}


# ---- resources ---------------------------------------------------------------------------------
def _resource(provider_cls, type_name: str, output_names: List[str]):
    # every bootstrap step keeps `loginKey` secret, as before the shared factory
    return step_resource(provider_cls, type_name, output_names, secret_outputs=["loginKey"])


HostKeyPin = _resource(HostKeyPinProvider, "HostKeyPin",
                       ["hostKey", "bastionHostKey", "hostKeyFingerprint", "loginKey",
                        "loginPublicKey", "passwordLoginState"])
MasterInQueue = _resource(MasterInQueueProvider, "MasterInQueue", ["inQueue", "changed"])
NvmeMount = _resource(NvmeMountProvider, "NvmeMount", ["mounted", "report"])
ModelWeights = _resource(ModelWeightsProvider, "ModelWeights",
                         ["path", "bytes", "files", "installed", "via"])
SifImage = _resource(SifImageProvider, "SifImage", ["path", "bytes", "installed", "via"])
Broadcast = _resource(BroadcastProvider, "Broadcast", ["jobId", "holding", "methodUsed", "copied"])
