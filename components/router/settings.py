"""How kimi-k3 runs vllm-router in front of its replicas: the command line and its stated times (pure).

vllm-router (PyPI `vllm-router`, the vLLM project's router, github.com/vllm-project/router) is
pinned at ROUTER_VERSION; every flag below is in its `vllm-router --help` and its defaults in
`vllm_router/router_args.py` of that release (0.1.17, PyPI upload of 2026-11; read from the
wheel and the sdist's Rust source). Defaults that do not suit Kimi K3, and why:

- `--worker-startup-timeout-secs` (default 600): with static worker URLs the router exits unless
  one worker answers /health within it (`src/routers/http/router.rs`
  `wait_for_healthy_workers`); Kimi K3 takes longer than 600 s to load. kimi-k3 sets the plan's
  start-up budget plus margin, and the supervisor restarts it anyway. With Kubernetes service
  discovery there is no such wait (the router starts empty and adds Ready pods).
- health checks (default every 60 s, 3 failures, 2 successes): an idle router would take up to
  3 minutes to notice a dead replica; kimi-k3 checks every 10 s.
- circuit breaker (default: opens after 10 failures, half-open after 60 s, closes after 3
  successes): a replica that came back waits 60 s; kimi-k3 opens after 3 and retries after 15 s
  (`src/core/worker.rs` `is_available = is_healthy && circuit_breaker.can_execute`).
- `--policy cache_aware` (the default): a conversation goes back to the replica that holds its
  prefix; load decides only past `balance_abs_threshold` (router default 64, kimi-k3 16). It routes on the token ids each worker's render route returns
  (`src/backend/preprocess.rs`); vLLM 0.33 serves that route only with `--enable-scale-out`
  (else 403, and the router falls back to least-loaded: no prefix affinity at all).
- the router listens on loopback behind kimi-k3's front (kk3_front.py): its admin routes have
  no authentication. Its Prometheus exporter listens on `prometheus_host` (loopback unless a
  target scrapes it from elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

ROUTER_PACKAGE = "vllm-router"
ROUTER_VERSION = "0.1.17"
#: what a target installs for the router and the front: vllm-router and every package it pulls
#: in, at the versions the tests ran (tests/unit/test_router_settings.py checks this list against
#: the installed distribution's dependency closure)
ROUTER_REQUIREMENTS = (
    "aiohappyeyeballs==2.7.1", "aiohttp==3.14.5", "aiosignal==1.4.0", "annotated-doc==0.0.7",
    "annotated-types==0.8.0", "anyio==4.16.0", "attrs==26.1.0", "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3", "click==8.5.1", "fastapi==0.165.0", "frozenlist==1.8.0",
    "h11==0.16.0", "idna==3.20", "multidict==7.2.1", "opentelemetry-api==1.45.2",
    "orjson==3.13.0", "propcache==0.5.4", "pydantic==2.14.4", "pydantic-core==2.50.5",
    "requests==2.34.2", "setproctitle==1.3.8", "starlette==1.10.0", "typing-extensions==4.16.0",
    "typing-inspection==0.4.5", "urllib3==2.8.0", "uvicorn==0.54.0",
    f"vllm-router=={ROUTER_VERSION}", "yarl==1.25.1",
)
#: the same vllm-router for a Python 3.8-3.10 (the CTyun master's OS python3 is often older than
#: 3.11: openEuler 22.03 ships 3.9): vllm-router 0.1.17 is a `cp38-abi3` wheel with Requires-Python
#: >=3.8, but the newest fastapi/starlette/multidict above need 3.11. Resolved by real pip against
#: PyPI on 2026-12-02 (`pip download vllm-router==0.1.17 exceptiongroup async-timeout
#: typing-extensions --only-binary :all: --python-version 3.8 --platform manylinux_2_28_aarch64
#: ...`: pip evaluates environment markers against the interpreter it runs on, so the
#: `python_version < "3.11"` dependencies of anyio and aiohttp are named), every wheel's
#: Requires-Dist checked with its markers evaluated for 3.8, 3.9 and 3.10, and the pinned set
#: downloaded again for cp38/cp39/cp310 on manylinux aarch64 and x86_64 (docs/router.md)
ROUTER_REQUIREMENTS_LEGACY = (
    "aiohappyeyeballs==2.4.4", "aiohttp==3.10.11", "aiosignal==1.3.1", "annotated-doc==0.0.4",
    "annotated-types==0.7.0", "anyio==4.5.2", "async-timeout==5.0.1", "attrs==25.3.0",
    "certifi==2026.10.19.post1", "charset-normalizer==3.5.3", "click==8.1.8",
    "exceptiongroup==1.3.2", "fastapi==0.124.4", "frozenlist==1.5.0", "h11==0.16.0", "idna==3.15",
    "multidict==6.1.0", "orjson==3.10.15", "propcache==0.2.0", "pydantic==2.10.6",
    "pydantic-core==2.27.2", "requests==2.32.4", "setproctitle==1.3.7", "sniffio==1.3.1",
    "starlette==0.44.0", "typing-extensions==4.13.2", "urllib3==2.2.3", "uvicorn==0.33.0",
    f"vllm-router=={ROUTER_VERSION}", "yarl==1.15.2",
)
#: {closure: its requirements}: "current" for Python 3.11 and later (the tests' and the aws-eks
#: router pod's), "legacy" for 3.8-3.10 (wheels.json holds each one's floor and digests)
ROUTER_CLOSURES = {"current": ROUTER_REQUIREMENTS, "legacy": ROUTER_REQUIREMENTS_LEGACY}
#: the router's own port (loopback; clients reach kk3_front) and its metrics port
ROUTER_PORT = 30000
ROUTER_METRICS_PORT = 29000


@dataclass(frozen=True)
class RouterSettings:
    """What kimi-k3 passes to `vllm-router` (names as the flags, units in the names)."""

    startup_timeout_s: int = 7200
    policy: str = "cache_aware"
    health_check_interval_s: int = 10
    health_failure_threshold: int = 3
    health_success_threshold: int = 2
    health_check_timeout_s: int = 5
    cb_failure_threshold: int = 3
    cb_success_threshold: int = 1
    cb_timeout_s: int = 15
    retry_max_retries: int = 3
    request_timeout_s: int = 1800
    #: cache_aware sends a request by load instead of by prefix only when the busiest replica
    #: has this many more requests than the idlest (and `balance_rel_threshold` times as many).
    #: The router's default, 64, is a whole A3 replica's planned concurrency (16 sequences x DP4):
    #: prompts sharing a long system prompt would all pile onto one replica first
    balance_abs_threshold: int = 16
    balance_rel_threshold: float = 1.5
    host: str = "127.0.0.1"
    port: int = ROUTER_PORT
    prometheus_host: str = "127.0.0.1"
    prometheus_port: int = ROUTER_METRICS_PORT
    log_level: str = "info"
    extra: Tuple[str, ...] = field(default=())

    def __post_init__(self):
        for name in ("startup_timeout_s", "health_check_interval_s", "health_failure_threshold",
                     "health_success_threshold", "health_check_timeout_s",
                     "cb_failure_threshold", "cb_success_threshold", "cb_timeout_s",
                     "request_timeout_s", "port", "prometheus_port"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"router {name} must be at least 1, not {getattr(self, name)}")
        if self.policy not in ("cache_aware", "round_robin", "random", "power_of_two"):
            raise ValueError(f"router policy {self.policy!r} is not one kimi-k3 uses")

    # ---- the command line ----------------------------------------------------------------
    def argv(self, worker_urls: Sequence[str] = (), *, selector: Optional[dict] = None,
             namespace: Optional[str] = None, discovery_port: Optional[int] = None) -> List[str]:
        """`vllm-router ...`: static `worker_urls`, or Kubernetes service discovery of the pods
        matching `selector` in `namespace` on `discovery_port`."""
        if bool(worker_urls) == bool(selector):
            raise ValueError("give the router either worker URLs or a pod selector")
        a = ["vllm-router", "--host", self.host, "--port", str(self.port),
             "--policy", self.policy]
        if worker_urls:
            a += ["--worker-urls", *worker_urls]
        else:
            if not namespace or not discovery_port:
                raise ValueError("service discovery needs a namespace and a port")
            a += ["--service-discovery", "--selector",
                  *[f"{k}={v}" for k, v in sorted(selector.items())],
                  "--service-discovery-namespace", namespace,
                  "--service-discovery-port", str(discovery_port)]
        a += ["--worker-startup-timeout-secs", str(self.startup_timeout_s),
              "--health-check-interval-secs", str(self.health_check_interval_s),
              "--health-failure-threshold", str(self.health_failure_threshold),
              "--health-success-threshold", str(self.health_success_threshold),
              "--health-check-timeout-secs", str(self.health_check_timeout_s),
              "--health-check-endpoint", "/health",
              "--cb-failure-threshold", str(self.cb_failure_threshold),
              "--cb-success-threshold", str(self.cb_success_threshold),
              "--cb-timeout-duration-secs", str(self.cb_timeout_s),
              "--retry-max-retries", str(self.retry_max_retries),
              "--request-timeout-secs", str(self.request_timeout_s),
              "--balance-abs-threshold", str(self.balance_abs_threshold),
              "--balance-rel-threshold", str(self.balance_rel_threshold),
              "--prometheus-host", self.prometheus_host,
              "--prometheus-port", str(self.prometheus_port),
              "--log-level", self.log_level, *self.extra]
        return a

    # ---- stated times ----------------------------------------------------------------------
    def route_around_s(self) -> int:
        """A dead replica stops getting requests within this (seconds), traffic or not: the
        health checker marks it unhealthy after `health_failure_threshold` failed checks, each
        at most `health_check_timeout_s`, one every `health_check_interval_s`. Under traffic the
        circuit breaker opens sooner (after `cb_failure_threshold` failed requests), and a
        refused connection is retried on another replica meanwhile."""
        return self.health_check_interval_s * self.health_failure_threshold \
            + self.health_check_timeout_s

    def readmit_s(self) -> int:
        """A replica answering /health again gets requests within this (seconds): the health
        checker needs `health_success_threshold` good checks, and an opened circuit breaker
        half-opens after `cb_timeout_s`; one interval of slack for the check's phase."""
        return max(self.cb_timeout_s, self.health_check_interval_s * self.health_success_threshold) \
            + self.health_check_interval_s


#: the environment variable the front reads the API key from (the name vLLM reads it from)
FRONT_KEY_ENV = "VLLM_API_KEY"


def front_argv(listen: str, upstream: str, python: str = "python3",
               script: str = "kk3_front.py", api_key: bool = False) -> List[str]:
    """The allowlisting front's command line (kk3_front.py beside the router); with `api_key`
    it checks the key in FRONT_KEY_ENV before reading a body (kk3_front.py)."""
    return [python, script, "--listen", listen, "--upstream", upstream,
            *(("--api-key-env", FRONT_KEY_ENV) if api_key else ())]
