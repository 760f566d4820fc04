"""The readiness gate on AWS: `pulumi up` ends when the endpoint really serves, or says why not.

`EndpointReadiness` (`pulumi-python:dynamic/aws:EndpointReadiness`) runs after the workload and
the Service are applied (neither is awaited by the Kubernetes provider: on a Capacity Block that
starts later their pods stay Pending for days). It waits, within a deadline from the plan's
cold-start budget (node join + weight staging + vLLM's startup timeout), until the endpoint
answers `/health`, `/v1/models` listing the served model, and a real chat completion
(components/accept: `wait_ready`). It reaches vLLM the way `kubectl port-forward` does: through
the Kubernetes API, as the deployer, to the serving pod (port_forward.py says why not the
service proxy); the EKS token comes from the stack's AWS credentials (kube_api.eks_token).
While no pod serves yet, what it reports is where the pod is (Pending and why, staging weights,
crash-looping): the failure names the last thing it saw.

A block that starts later than `blockWaitMaxS` from now: `pulumi up` does not wait; the gate
records `ready: false`, when serving is expected (`servingExpectedBy`) and why, and returns at
once. Any later `pulumi up` (its diff reports a change while not ready) or `pulumi refresh`
runs the gate. A block that starts within `blockWaitMaxS` is waited for (progress phase
`block-start`), then gated.

Once the block is over (input `blockEnd`, less `SERVING_STOPS_BEFORE_END`: kimi-k3's schedule
scales the GPU node group to 0 an hour before the end, capacity.SCALE_DOWN_LEAD), nothing can
serve: the gate says so at once (`state: block-ended`, naming the end and the way to the next
block) instead of waiting for pods that have no node; a `pulumi refresh` records it, an `up`
fails with it.

`after_ready` is the hook where the acceptance checks run once the endpoint is ready (the
accept helper wires components/accept's gate in there); it runs while the tunnel is open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, UpdateResult

from ..dynamic.provider import DynamicResource
from ..progress.record import ProgressLog
from . import aws_api
from .capacity import SCALE_DOWN_LEAD, _utc, fmt
from .gate_budget import NODE_JOIN_S, Budget, budget_now
from .kube_api import pod_summary, serving_pod
#: a block starting within this is waited for; later ones are gated by a later `up`/refresh
BLOCK_WAIT_MAX_S = 1800
#: one wait_ready slice against one pod before the pods are looked at again
SLICE_S = 300.0
POLL_S = 10.0
REQUEST_TIMEOUT_S = 30.0
#: a refresh long after the budget ran out still looks once, this long
REFRESH_MIN_S = 120.0
#: where update() hands the gate the key before a rotation (not an input, never in the state)
PREVIOUS_KEY = "_previousApiKey"
#: inputs whose change means a different deployment to gate again; the replica count too:
#: replicas 2 -> 3 leaves the pods' template (launchFingerprint) as it was, and the new replica
#: must be asked once directly like the others (greedy_replicas), as on ctyun-hcc
GATE_INPUTS = ("launchFingerprint", "servedModelName", "port", "serviceName", "namespace", "apiKey",
               "podSelector", "blockStart", "acceptLoad", "replicas", "replicaSelector")


class GateFailed(Exception):
    """The endpoint did not serve within the deadline; the message is one line."""


@dataclass(frozen=True)
class GateResult:
    ready: bool
    via: str
    last_seen: str
    elapsed_s: float
    acceptance: Optional[Dict[str, Any]] = None


def run_gate(cluster, *, namespace: str, selector: Mapping[str, str], model: str,
             api_key: Optional[str], deadline_s: float, phase, poll_s: float = POLL_S,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
             wait_ready=None, after_ready=None, budget_why: str = "") -> GateResult:
    """Wait until `cluster`'s serving pod answers; GateResult, or GateFailed naming what was seen.

    `cluster` offers `pods()` and `forward(pod_name)` (a context manager with `.url`, the local
    OpenAI base URL, and `.last_error`); `phase` is a progress phase (`update(text)`).
    """
    if wait_ready is None:
        from ..accept import wait_ready
    start = clock()
    deadline = start + float(deadline_s)
    last = "nothing yet"
    while True:
        left = deadline - clock()
        if left <= 0:
            break
        try:
            pods: List[Mapping[str, Any]] = cluster.pods()
        except Exception as e:  # noqa: BLE001 the API may be briefly unreachable
            pods, last = [], f"Kubernetes API: {type(e).__name__}: {e}"
        pod = serving_pod(pods)
        if pod is None:
            if pods:
                last = "; ".join(pod_summary(p) for p in pods)
            elif not last.startswith("Kubernetes API"):
                last = f"no pod labelled {dict(selector)} in {namespace} yet"
            phase.update(last)
            sleep(max(0.0, min(poll_s, deadline - clock())))
            continue
        name = pod["metadata"]["name"]
        with cluster.forward(name) as fw:
            r = wait_ready(fw.url, model, api_key, timeout_s=max(0.1, min(SLICE_S, deadline - clock())),
                           poll_interval_s=poll_s, request_timeout_s=REQUEST_TIMEOUT_S,
                           on_poll=lambda gate, seen: phase.update(f"pod {name}: {gate}: {seen}"))
            if r.ready:
                accepted = after_ready(fw.url) if after_ready is not None else None
                return GateResult(True, f"port-forward to pod {name}", r.last_seen,
                                  round(clock() - start, 1), accepted)
            last = f"pod {name}: waiting for {r.stage}; last seen: {r.last_seen}"
            if fw.last_error:
                last += f"; {fw.last_error}"
    why = f"; {budget_why}" if budget_why else ""
    raise GateFailed(f"the endpoint did not serve within {deadline_s:g} s (the plan's cold-start budget "
                     f"plus {NODE_JOIN_S} s for the nodes to join{why}); last seen: {last}")


def after_ready(props: Mapping[str, Any], url: str, log: ProgressLog, cluster=None,
                deadline: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """Hook: the acceptance checks run here once the endpoint is ready (tunnel open at `url`).

    components/accept/gate.py through the same tunnel: the functional checks always, the
    known-answer checks (the needle up to the plan's context, capped: `acceptKnown`), the load
    part as `acceptLoad` ({requests, concurrency, maxTokens} from kimi-k3:acceptLoad and the
    plan; None = off). Behind the router (`replicaSelector`), every replica's serving pod is
    also reached through a port-forward of its own, once all `replicas` serve (within
    `deadline`, monotonic), and asked directly (greedy_replicas). Returns the summary (exported
    as the gate's `acceptance`); a failed check raises GateFailed("acceptance check <name>
    failed: ..."), so `pulumi up` fails naming it and a refresh reports it without failing.
    """
    import contextlib

    from ..accept.gate import (AcceptanceFailed, gate_config, known_kwargs, run_gate,
                               usd_per_hour_input)
    from ..accept.sizing import LoadSize

    load = props.get("acceptLoad") or None
    size = LoadSize(int(load["requests"]), int(load["concurrency"]), int(load["maxTokens"])) \
        if load else None
    where = f"{props.get('namespace')}/{props.get('serviceName')}"
    with contextlib.ExitStack() as stack:
        replicas = _replica_urls(props, cluster, stack, log, deadline)
        cfg = gate_config(url, props["servedModelName"], props.get("apiKey") or None, size,
                          dict(props.get("acceptHardware") or {}) or None, replicas=replicas,
                          previous_key=props.get(PREVIOUS_KEY), **known_kwargs(dict(props)))
        with log.phase("accept-gate", f"acceptance checks on {where} (through the port-forward)") as ph:
            try:
                out = run_gate(cfg, on_check=lambda r: ph.update(f"{r.name}: {'ok' if r.ok else 'FAILED'}"),
                               usd_per_hour=usd_per_hour_input(props))
            except AcceptanceFailed as e:
                raise GateFailed(f"{e} (service {where}, through a Kubernetes API port-forward)") from None
    via = "Kubernetes API port-forward to the serving pod"
    if replicas:
        via = (f"Kubernetes API port-forward to the router's pod, and to each of the "
               f"{len(replicas)} replicas once")
    return {**out, "endpoint": f"service {where}", "via": via}


#: how often the replicas' pods are looked at while waiting for all of them to serve
REPLICA_POLL_S = 10.0


def _replica_urls(props: Mapping[str, Any], cluster, stack, log: ProgressLog,
                  deadline: Optional[float], clock=time.monotonic, sleep=time.sleep) -> List[str]:
    """Behind the router: one port-forward (entered on `stack`) to each replica's serving pod,
    once `replicas` of them are running and each answers (wait_ready); [] for one replica."""
    from ..accept import wait_ready
    from .kube_api import pod_summary

    selector, want = props.get("replicaSelector"), int(props.get("replicas") or 0)
    if not selector or want < 2 or cluster is None:
        return []
    deadline = deadline if deadline is not None else clock() + SLICE_S
    ns = props["namespace"]
    with log.phase("replicas", f"all {want} replicas to serve (each is asked once directly)") as ph:
        while True:
            pods = sorted((p for p in cluster.pods_matching(selector) if _running(p)),
                          key=lambda p: p["metadata"]["name"])
            if len(pods) >= want:
                break
            seen = "; ".join(pod_summary(p) for p in cluster.pods_matching(selector)) or "none"
            if clock() >= deadline:
                raise GateFailed(f"only {len(pods)} of {want} replicas run in {ns} "
                                 f"({dict(selector)}); last seen: {seen}")
            ph.update(f"{len(pods)} of {want} running; {seen}")
            sleep(max(0.0, min(REPLICA_POLL_S, deadline - clock())))
        urls = []
        for p in pods[:want]:
            name = p["metadata"]["name"]
            fw = stack.enter_context(cluster.forward(name))
            r = wait_ready(fw.url, props["servedModelName"], props.get("apiKey") or None,
                           timeout_s=max(0.1, deadline - clock()), poll_interval_s=POLL_S,
                           request_timeout_s=REQUEST_TIMEOUT_S,
                           on_poll=lambda gate, seen: ph.update(f"pod {name}: {gate}: {seen}"))
            if not r.ready:
                raise GateFailed(f"replica pod {name} did not serve: waiting for {r.stage}; "
                                 f"last seen: {r.last_seen}")
            urls.append(fw.url)
        ph.done(f"{want} replicas serve")
    return urls


def _running(pod: Mapping[str, Any]) -> bool:
    from .kube_api import serving_pod

    return serving_pod([pod]) is not None


# ---------------------------------------------------------------- pure timing

def block_timing(block_start: Optional[str], now: datetime, wait_max_s: float) -> str:
    """"started", "wait" (starts within `wait_max_s`: wait for it) or "defer" (later `up` gates)."""
    if not block_start:
        return "started"
    left = (_utc(block_start) - _utc(now)).total_seconds()
    if left <= 0:
        return "started"
    return "wait" if left <= wait_max_s else "defer"


def expected_by(block_start: Optional[str], now: datetime, expected_s: float) -> str:
    """The block's start (or now) + the plan's block-start-to-first-token figure."""
    begin = max(_utc(block_start), _utc(now)) if block_start else _utc(now)
    return fmt(begin + timedelta(seconds=float(expected_s or 0)))


def serving_over(block_end: Optional[str], now: datetime, lead: timedelta) -> bool:
    """True once `block_end - lead` has passed (no node can serve any more); False without an end."""
    return bool(block_end) and _utc(now) >= _utc(block_end) - lead


def ended_outputs(text: str) -> Dict[str, Any]:
    return {"ready": False, "state": "block-ended", "servingExpectedBy": None, "lastSeen": text, "via": None,
            "readySeconds": None, "endpoint": None, "acceptance": None}


def deferred_outputs(props: Mapping[str, Any], now: datetime) -> Dict[str, Any]:
    when = expected_by(props.get("blockStart"), now, props.get("expectedS") or 0)
    return {"ready": False, "state": "waiting-for-block", "servingExpectedBy": when,
            "lastSeen": f"the Capacity Block starts at {props.get('blockStart')}; serving is expected by "
                        f"about {when}: run `pulumi up` (or `pulumi refresh`) after that to gate it",
            "via": None, "readySeconds": None, "endpoint": None, "acceptance": None}


# ---------------------------------------------------------------- the real cluster

class EksCluster:
    """pods()/forward()/service() against the EKS cluster of `props`, as the deployer."""

    def __init__(self, props: Mapping[str, Any]):
        from .kube_api import KubeApi, eks_token, ssl_context

        self.props = props
        sess = aws_api.session(props)
        region = (props.get("aws") or {}).get("region") or props.get("region")
        self.token = lambda: eks_token(sess, props["clusterName"], region)
        self.ssl = ssl_context(props["caData"])
        self.api = KubeApi(props["apiEndpoint"], props["caData"], self.token, verify=self.ssl)

    def pods(self):
        return self.api.pods(self.props["namespace"], self.props["podSelector"])

    def pods_matching(self, selector: Mapping[str, str]):
        """The namespace's pods labelled `selector` (each replica's serving pod)."""
        return self.api.pods(self.props["namespace"], selector)

    def service(self):
        return self.api.service(self.props["namespace"], self.props["serviceName"])

    def forward(self, pod: str):
        from .port_forward import PortForward, websocket_opener, ws_url

        url = ws_url(self.props["apiEndpoint"], self.props["namespace"], pod, int(self.props["port"]))
        return PortForward(websocket_opener(url, self.token, self.ssl))


def _now() -> datetime:
    return datetime.now(timezone.utc)


class EndpointReadinessProvider(aws_api.AwsProvider):
    """The gate as a dynamic provider. Holds no client; reads credentials at call time."""

    OUTPUTS = ("ready", "state", "lastSeen", "servingExpectedBy", "endpoint", "via", "readySeconds",
               "acceptance", "checkedAt")
    SECRET_OUTPUTS = ("apiKey", aws_api.SECRETS_INPUT)
    DIFF_KEYS = GATE_INPUTS
    DELETE_BEFORE_REPLACE = False
    cluster_factory = EksCluster
    #: nothing serves from this long before the block's end (kimi-k3 scales the group to 0 then)
    SERVING_STOPS_BEFORE_END = SCALE_DOWN_LEAD

    def ended_text(self, p: Mapping[str, Any]) -> str:
        stop = fmt(_utc(p["blockEnd"]) - self.SERVING_STOPS_BEFORE_END)
        return (f"the Capacity Block {p.get('reservationId')} ends at {p['blockEnd']} and kimi-k3 scaled its nodes "
                f"to 0 at {stop}: nothing serves until the next block. Run `pulumi up`: with "
                "kimi-k3:maxUpfrontFeeUsd it buys the next one under that cap; an adopted block needs the next "
                "one's id in kimi-k3:capacityReservationId")

    def _over(self, p: Mapping[str, Any], log: ProgressLog, raise_on_fail: bool) -> Optional[Dict[str, Any]]:
        """The outputs (or, during `up`, the failure) for a block that is over; None while it is not."""
        if not serving_over(p.get("blockEnd"), _now(), self.SERVING_STOPS_BEFORE_END):
            return None
        text = self.ended_text(p)
        if raise_on_fail:
            raise GateFailed(text)
        log.say(text)
        return ended_outputs(text)

    def _gate(self, p: Dict[str, Any], deadline_of: Callable[[Optional[Budget]], float],
              raise_on_fail: bool = True) -> Dict[str, Any]:
        log = self.progress(p)
        now = _now()
        over = self._over(p, log, raise_on_fail)
        if over is not None:
            return over
        timing = block_timing(p.get("blockStart"), now, float(p.get("blockWaitMaxS") or BLOCK_WAIT_MAX_S))
        if timing == "defer":
            outs = deferred_outputs(p, now)
            log.say(outs["lastSeen"])
            self._say_mirror(p, log)
            return outs
        # the mirror Job's progress reaches the progress file while this waits (weights-mirror)
        with self._mirror_watch(p, log):
            return self._wait(p, log, now, timing, deadline_of, raise_on_fail)

    def _wait(self, p: Dict[str, Any], log: ProgressLog, now: datetime, timing: str,
              deadline_of: Callable[[Optional[Budget]], float], raise_on_fail: bool) -> Dict[str, Any]:
        if timing == "wait":
            with log.phase("block-start", f"Capacity Block {p.get('reservationId')} to start at {p['blockStart']}",
                           deadline_s=(_utc(p["blockStart"]) - now).total_seconds()) as ph:
                while _now() < _utc(p["blockStart"]):
                    ph.update(f"starts at {p['blockStart']}")
                    time.sleep(min(30.0, max(0.0, (_utc(p["blockStart"]) - _now()).total_seconds())))
        budget = self._budget(p, log)
        deadline_s = deadline_of(budget)
        cluster = self.cluster_factory(p)
        try:
            with log.phase("readiness-gate", f"{p['servedModelName']} to answer /health, /v1/models and a "
                           f"chat completion (pod of {p['namespace']}/{p['serviceName']})",
                           deadline_s=deadline_s, **self._expect(p, budget)) as ph:
                result = run_gate(cluster, namespace=p["namespace"], selector=p["podSelector"],
                                  model=p["servedModelName"], api_key=p.get("apiKey") or None,
                                  deadline_s=deadline_s, phase=ph, poll_s=float(p.get("pollIntervalS") or POLL_S),
                                  after_ready=lambda url: after_ready(p, url, log, cluster,
                                                                      time.monotonic() + deadline_s),
                                  budget_why="" if budget is None else budget.why)
                ph.done(result.last_seen)
        except GateFailed as e:
            if raise_on_fail:
                raise
            return {"ready": False, "state": "not-ready", "lastSeen": str(e), "via": None,
                    "readySeconds": None, "servingExpectedBy": None, "endpoint": None, "acceptance": None}
        endpoint = None
        try:
            from .kube_api import load_balancer_host

            host = load_balancer_host(cluster.service())
            endpoint = f"http://{host}:{int(p['port'])}/v1" if host else None
        except Exception:  # noqa: BLE001 the endpoint output is informative only
            pass
        return {"ready": True, "state": "serving", "lastSeen": result.last_seen, "via": result.via,
                "readySeconds": result.elapsed_s, "servingExpectedBy": None, "endpoint": endpoint,
                "acceptance": result.acceptance}

    def _budget(self, p: Mapping[str, Any], log: ProgressLog) -> Optional[Budget]:
        """With the stack's mirror: the figures for what the bucket holds now (gate_budget.py);
        None: the plan's (`budgetS`)."""
        m = p.get("mirror")
        if not m:
            return None
        try:
            st = self._mirror_reader(p)()
        except Exception as e:  # noqa: BLE001 unreadable: budget for the longest case, and say why
            log.say(f"readiness-gate: could not read the mirror {_where(m)}: {type(e).__name__}: {e}")
            return budget_now(m, None)
        return budget_now(m, st.complete, st.bytes_done)

    @staticmethod
    def _mirror_reader(p: Mapping[str, Any]):
        """A function reading the stack's mirror bucket now (weights/watch.py), as the stack."""
        from .weights.watch import read_state

        m = p["mirror"]
        return lambda: read_state(aws_api.client("s3", p), m["bucket"], m["prefix"], int(m["totalBytes"]))

    def _mirror_watch(self, p: Mapping[str, Any], log: ProgressLog):
        """Phase `weights-mirror` while the gate waits (a no-op without the stack's mirror)."""
        import contextlib

        from .weights.watch import POLL_S as MIRROR_POLL_S, MirrorWatch

        m = p.get("mirror")
        if not m:
            return contextlib.nullcontext()
        return MirrorWatch(log, self._mirror_reader(p), _where(m), float(m["fillGbPerS"]),
                           poll_s=float(p.get("pollIntervalS") or MIRROR_POLL_S))

    def _say_mirror(self, p: Mapping[str, Any], log: ProgressLog) -> None:
        """A deferred gate (`pulumi up` does not wait): one line on how far the mirror is."""
        m = p.get("mirror")
        if not m:
            return
        try:
            log.say(f"weights-mirror: {self._mirror_reader(p)().text(_where(m))}")
        except Exception as e:  # noqa: BLE001 informative only
            log.say(f"weights-mirror: could not read {_where(m)}: {type(e).__name__}: {e}")

    @staticmethod
    def _expect(p: Mapping[str, Any], budget: Optional[Budget]) -> Dict[str, Any]:
        if budget is None:
            return {}  # progressExpect: the plan's first token
        return {"expected_s": budget.expected_s, "assumption": f"node start to first token; {budget.why}"}

    @staticmethod
    def _deadline(p: Mapping[str, Any]) -> Callable[[Optional[Budget]], float]:
        return lambda b: float(p["budgetS"]) if b is None else float(b.deadline_s)

    def create(self, p):
        outs = self._gate(p, self._deadline(p))
        return CreateResult(f"{p['namespace']}/{p['serviceName']}", {**p, **outs, "checkedAt": fmt(_now())})

    def diff(self, id_, olds, news):
        d = super().diff(id_, olds, news)
        # not ready yet (a block that had not started): every later `up` gates again; a block
        # whose end moved (extended: EC2 keeps its id) gates again too, so the state holds the
        # new end and a later refresh does not call an extended block ended at its old end
        moved = bool(olds.get("blockEnd")) and olds.get("blockEnd") != news.get("blockEnd")
        return DiffResult(changes=d.changes or not olds.get("ready") or moved, replaces=[],
                          delete_before_replace=False)

    def update(self, id_, olds, p):
        from ..accept.gate import previous_key_of

        # a new key: the acceptance's auth check also sees the old one refused (never an output)
        gated = {**p, PREVIOUS_KEY: previous_key_of(olds, p)}
        return UpdateResult({**p, **self._gate(gated, self._deadline(gated)), "checkedAt": fmt(_now())})

    def read(self, id_, p):
        """`pulumi refresh`: gate what remains of the budget since the block started, never fail."""
        begin = max(_utc(p["blockStart"]), _utc(p.get("checkedAt") or p["blockStart"])) \
            if p.get("blockStart") else _now()
        used = (_now() - begin).total_seconds()
        # what is left since the block started; with a mirror still filling, at least its rest
        outs = self._gate(p, lambda b: max(REFRESH_MIN_S, self._deadline(p)(b) - used,
                                           0 if b is None else b.from_now_s), raise_on_fail=False)
        return ReadResult(id_, {**p, **outs, "checkedAt": fmt(_now())})

    def delete(self, id_, props):
        return None


def _where(m: Mapping[str, Any]) -> str:
    return f"s3://{m['bucket']}/{m['prefix']}"


class EndpointReadiness(DynamicResource, module="aws", name="EndpointReadiness"):
    """Waits for the served endpoint (see the module docstring); exports what it saw."""

    ready: pulumi.Output[bool]
    state: pulumi.Output[str]
    lastSeen: pulumi.Output[str]
    servingExpectedBy: pulumi.Output[Optional[str]]
    endpoint: pulumi.Output[Optional[str]]
    via: pulumi.Output[Optional[str]]
    readySeconds: pulumi.Output[Optional[float]]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(EndpointReadinessProvider(), name, props, opts)
