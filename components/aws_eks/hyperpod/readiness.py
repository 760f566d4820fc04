"""The HyperPod path's readiness gate: the operator reports the endpoint deployed, it answers, it
passes the acceptance checks, and `pulumi up` learns its real URL.

`HyperPodReadiness` (`pulumi-python:dynamic/aws:HyperPodReadiness`) is the EKS path's gate
(components/aws_eks/readiness.py: the same budget, deferral, port-forward and acceptance
checks) with two steps of its own:

1. **Deployed**: the `InferenceEndpointConfig`'s `status.state` reaches `DeploymentComplete`
   (the operator's CRD, tests/contracts/hyperpod/iec_facts.yaml `status.state`); on
   `DeploymentFailed` the gate fails at once with `status.deploymentStatus.reason/message`. While
   it waits it reports the state, the operator's message and where each pod is.
2. **Serving**: the pods the operator labelled (`status.selector`, "LabelSelector for the
   deployment") are reached through the Kubernetes API as on the EKS path, and must answer
   /health, /v1/models and a chat completion; then the acceptance checks run.

The URL: the CRD's status has no host name (AWS's troubleshooting page lists the operator's steps
as "Deploy model pod · Create load balancer · Create SageMaker AI endpoint"), so the gate reads it
where the AWS Load Balancer Controller writes it, the `status.loadBalancer.ingress[].hostname` of
the Ingress in the endpoint's namespace (the stack's own namespace holds no other), and asks ELBv2
for that load balancer's scheme (internal or internet-facing: the operator decides it, kimi-k3
reports it). TLS: the operator's certificate is written to `status.tlsCertificate`
(`tlsCertificateOutputS3Bucket`, `tlsCertificateS3Keys`, `certificateDomainNames`), and the
`curl` output fetches it from S3 and checks the listener against it (`--cacert`, and
`--connect-to` when the certificate names a host other than the load balancer's).

The clock starts at the training plan's start (`blockStart`): a plan that starts later than
`blockWaitMaxS` defers the gate to a later `pulumi up` or refresh, as a Capacity Block does.
"""

from __future__ import annotations

import shlex
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import pulumi

from ...dynamic.provider import DynamicResource
from .. import aws_api
from ..capacity import _utc, fmt
from ..kube_api import load_balancer_host, pod_summary
from ..readiness import (BLOCK_WAIT_MAX_S, POLL_S, EksCluster, EndpointReadinessProvider, GateFailed,
                         after_ready, block_timing, expected_by, run_gate)

IEC_GROUP = "inference.sagemaker.aws.amazon.com"
DONE, FAILED = "DeploymentComplete", "DeploymentFailed"
#: after DeploymentComplete the pod is Ready: the serving check gets at least this long
SERVE_MIN_S = 300.0


# ---------------------------------------------------------------- pure

def deployment_state(iec: Mapping[str, Any]) -> Tuple[str, str]:
    """("done" | "failed" | "waiting", what the operator says)."""
    status = iec.get("status") or {}
    state = status.get("state") or "no status yet"
    ds = status.get("deploymentStatus") or {}
    why = "; ".join(x for x in (ds.get("reason"), ds.get("message")) if x)
    text = f"{state}" + (f" ({why})" if why else "")
    if state == DONE:
        return "done", text
    if state == FAILED:
        return "failed", text
    return "waiting", text


def parse_selector(text: Any) -> Optional[Dict[str, str]]:
    """`status.selector` ("a=b,c=d") as labels; None when absent or not plain equality terms."""
    if not isinstance(text, str) or not text.strip():
        return None
    out: Dict[str, str] = {}
    for term in text.split(","):
        key, sep, value = term.strip().partition("=")
        if not sep or not key or key.endswith("!") or "(" in key or value.startswith("="):
            return None
        out[key.strip()] = value.strip()
    return out


def ingress_host(ingresses: List[Mapping[str, Any]]) -> Optional[str]:
    """The load balancer host of the first Ingress (by name) that has one."""
    for ing in sorted(ingresses, key=lambda i: (i.get("metadata") or {}).get("name", "")):
        host = load_balancer_host(ing)
        if host:
            return host
    return None


def certificate(iec: Mapping[str, Any]) -> Dict[str, Any]:
    """{bucket, key, names} of the operator's certificate, as far as its status says."""
    tls = (iec.get("status") or {}).get("tlsCertificate") or {}
    keys = [k for k in tls.get("tlsCertificateS3Keys") or [] if isinstance(k, str) and k]
    bucket = str(tls.get("tlsCertificateOutputS3Bucket") or "").replace("s3://", "").strip("/") or None
    return {"bucket": bucket, "key": keys[0] if keys else None,
            "names": [n for n in tls.get("certificateDomainNames") or [] if isinstance(n, str) and n]}


def endpoint_url(host: Optional[str]) -> Optional[str]:
    return f"https://{host}/v1" if host else None


def curl_line(host: str, cert: Mapping[str, Any], model: str, api_key: bool) -> str:
    """One chat request through the operator's load balancer over TLS, checked against the
    operator's certificate (fetched from S3 when its status names it; the key is read from the
    shell, never printed). Every value is quoted for the shell."""
    from ...inference.curl import chat_curl

    name = cert["names"][0] if cert.get("names") else host
    base = f"https://{name}/v1"
    cmd = chat_curl(base, model, api_key, "Say hello", 32)
    extra = []
    if cert.get("bucket") and cert.get("key"):
        extra.append("--cacert k3-endpoint-ca.pem")
    if name != host:
        extra.append(f"--connect-to {shlex.quote(f'{name}:443:{host}:443')}")
    if extra:
        cmd = cmd.replace("curl ", "curl " + " ".join(extra) + " ", 1)
    if cert.get("bucket") and cert.get("key"):
        fetch = f"aws s3 cp {shlex.quote('s3://' + cert['bucket'] + '/' + cert['key'])} k3-endpoint-ca.pem"
        return f"{fetch} && {cmd}"
    return cmd


def deferred_outputs(props: Mapping[str, Any], now: datetime) -> Dict[str, Any]:
    when = expected_by(props.get("blockStart"), now, props.get("expectedS") or 0)
    return {"ready": False, "state": "waiting-for-training-plan", "servingExpectedBy": when,
            "lastSeen": f"the training plan {props.get('reservationId')} starts at {props.get('blockStart')}; "
                        f"serving is expected by about {when}: run `pulumi up` (or `pulumi refresh`) after that "
                        "to gate it",
            "via": None, "readySeconds": None, "endpoint": None, "acceptance": None, "curl": None,
            "loadBalancer": None}


# ---------------------------------------------------------------- the real cluster

class HyperPodCluster(EksCluster):
    """The EKS path's cluster access, plus the endpoint config, its Ingress and the ELB scheme."""

    def iec(self) -> Dict[str, Any]:
        p = self.props
        return self.api.get(f"/apis/{IEC_GROUP}/v1/namespaces/{p['namespace']}/inferenceendpointconfigs/"
                            f"{p['iecName']}")

    def ingresses(self) -> List[Dict[str, Any]]:
        return self.api.get(f"/apis/networking.k8s.io/v1/namespaces/{self.props['namespace']}/ingresses").get(
            "items", [])

    def all_pods(self) -> List[Dict[str, Any]]:
        return self.api.pods(self.props["namespace"], {})

    def scheme(self, host: str) -> Optional[str]:
        elbv2 = aws_api.client("elbv2", self.props)
        marker = None
        while True:
            page = elbv2.describe_load_balancers(**({"Marker": marker} if marker else {}))
            for lb in page.get("LoadBalancers", []):
                if lb.get("DNSName", "").lower() == host.lower():
                    return lb.get("Scheme")
            marker = page.get("NextMarker")
            if not marker:
                return None


def wait_deployed(cluster, deadline_s: float, phase, poll_s: float = POLL_S,
                  clock: Callable[[], float] = time.monotonic,
                  sleep: Callable[[float], None] = time.sleep) -> Dict[str, Any]:
    """Poll the endpoint config until DeploymentComplete (returned); GateFailed on
    DeploymentFailed or at the deadline, naming the state, the operator's message and the pods."""
    end = clock() + float(deadline_s)
    last = "nothing yet"
    while True:
        try:
            iec = cluster.iec()
            verdict, text = deployment_state(iec)
        except Exception as e:  # noqa: BLE001 the API or the object may not answer yet
            iec, verdict, text = {}, "waiting", f"Kubernetes API: {type(e).__name__}: {e}"
        if verdict == "done":
            return iec
        if verdict == "failed":
            raise GateFailed(f"the inference operator reports the endpoint {text}")
        try:
            pods = "; ".join(pod_summary(p) for p in cluster.all_pods()) or "no pod yet"
        except Exception:  # noqa: BLE001 informative only
            pods = "pods not readable"
        last = f"{text}; {pods}"
        phase.update(last)
        if clock() >= end:
            raise GateFailed(f"the inference operator did not report the endpoint deployed within {deadline_s:g} s "
                             f"(the plan's budget); last seen: {last}")
        sleep(max(0.0, min(float(poll_s), end - clock())))


# ---------------------------------------------------------------- the provider

def _now() -> datetime:
    return datetime.now(timezone.utc)


class HyperPodReadinessProvider(EndpointReadinessProvider):
    OUTPUTS = EndpointReadinessProvider.OUTPUTS + ("curl", "loadBalancer")
    cluster_factory = HyperPodCluster
    #: the training plan's instances serve until its end (nothing of kimi-k3 scales them down)
    SERVING_STOPS_BEFORE_END = timedelta(0)

    def ended_text(self, p: Mapping[str, Any]) -> str:
        return (f"the training plan {p.get('reservationId')} ended at {p['blockEnd']}: its nodes are gone and "
                "nothing serves until the next plan. Run `pulumi up`: with kimi-k3:maxUpfrontFeeUsd it buys the "
                "next one under that cap; an adopted plan needs the next one's ARN in kimi-k3:trainingPlanArn")

    def _gate(self, p, deadline_of, raise_on_fail: bool = True):
        log = self.progress(p)
        now = _now()
        over = self._over(p, log, raise_on_fail)
        if over is not None:
            return {**over, "curl": None, "loadBalancer": None}
        timing = block_timing(p.get("blockStart"), now, float(p.get("blockWaitMaxS") or BLOCK_WAIT_MAX_S))
        if timing == "defer":
            outs = deferred_outputs(p, now)
            log.say(outs["lastSeen"])
            return outs
        if timing == "wait":
            with log.phase("plan-start", f"training plan {p.get('reservationId')} to start at {p['blockStart']}",
                           deadline_s=(_utc(p["blockStart"]) - now).total_seconds()) as ph:
                while _now() < _utc(p["blockStart"]):
                    ph.update(f"starts at {p['blockStart']}")
                    time.sleep(min(30.0, max(0.0, (_utc(p["blockStart"]) - _now()).total_seconds())))
        return self._serve(p, log, deadline_of(None), raise_on_fail)

    def _serve(self, p, log, deadline_s: float, raise_on_fail: bool) -> Dict[str, Any]:
        started = time.monotonic()
        cluster = self.cluster_factory(p)
        poll = float(p.get("pollIntervalS") or POLL_S)
        try:
            with log.phase("endpoint-deploy", f"the inference operator to deploy {p['namespace']}/{p['iecName']}",
                           deadline_s=deadline_s) as ph:
                iec = wait_deployed(cluster, deadline_s, ph, poll_s=poll)
                ph.done(deployment_state(iec)[1])
            selector = parse_selector((iec.get("status") or {}).get("selector")) or {}
            cluster = self.cluster_factory({**p, "podSelector": selector})
            left = max(SERVE_MIN_S, deadline_s - (time.monotonic() - started))
            with log.phase("readiness-gate", f"{p['servedModelName']} to answer /health, /v1/models and a chat "
                           f"completion (pods of {p['namespace']}/{p['iecName']})", deadline_s=left) as ph:
                result = run_gate(cluster, namespace=p["namespace"], selector=selector,
                                  model=p["servedModelName"], api_key=p.get("apiKey") or None, deadline_s=left,
                                  phase=ph, poll_s=poll, after_ready=lambda url: after_ready(p, url, log))
                ph.done(result.last_seen)
        except GateFailed as e:
            if raise_on_fail:
                raise
            return {"ready": False, "state": "not-ready", "lastSeen": str(e), "via": None, "readySeconds": None,
                    "servingExpectedBy": None, "endpoint": None, "acceptance": None, "curl": None,
                    "loadBalancer": None}
        return {"ready": True, "state": "serving", "lastSeen": result.last_seen, "via": result.via,
                "readySeconds": result.elapsed_s, "servingExpectedBy": None, "acceptance": result.acceptance,
                **self._endpoint(cluster, iec, p, log)}

    def _endpoint(self, cluster, iec: Mapping[str, Any], p: Mapping[str, Any], log) -> Dict[str, Any]:
        """The URL, the curl line and the load balancer's scheme (informative: never fails the gate)."""
        try:
            host = ingress_host(cluster.ingresses())
        except Exception as e:  # noqa: BLE001
            log.say(f"readiness-gate: the operator's Ingress could not be read: {type(e).__name__}: {e}")
            host = None
        if not host:
            return {"endpoint": None, "curl": None, "loadBalancer": None}
        try:
            scheme = cluster.scheme(host)
        except Exception:  # noqa: BLE001
            scheme = None
        cert = certificate(iec)
        if scheme == "internet-facing":  # the operator's decision: said at every gate
            self.warn(f"the inference operator's load balancer {host} is internet-facing: anyone can reach "
                      "the endpoint (kimi-k3 requires kimi-k3:apiKey on this path)")
        return {"endpoint": endpoint_url(host), "loadBalancer": {"host": host, "scheme": scheme, "certificate": cert},
                "curl": curl_line(host, cert, p["servedModelName"], bool(p.get("apiKey")))}

    def create(self, p):
        from pulumi.dynamic import CreateResult

        outs = self._gate(p, self._deadline(p))
        return CreateResult(f"{p['namespace']}/{p['iecName']}", {**p, **outs, "checkedAt": fmt(_now())})


class HyperPodReadiness(DynamicResource, module="aws", name="HyperPodReadiness"):
    """Waits for the operator's endpoint to serve (module docstring); exports what it saw."""

    ready: pulumi.Output[bool]
    state: pulumi.Output[str]
    lastSeen: pulumi.Output[str]
    servingExpectedBy: pulumi.Output[Optional[str]]
    endpoint: pulumi.Output[Optional[str]]
    curl: pulumi.Output[Optional[str]]
    loadBalancer: pulumi.Output[Optional[Dict[str, Any]]]
    via: pulumi.Output[Optional[str]]
    readySeconds: pulumi.Output[Optional[float]]

    def __init__(self, name: str, props: Dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(HyperPodReadinessProvider(), name, props, opts)
