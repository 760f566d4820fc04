"""ctyun:endpoint / CTYUN_ENDPOINT: https only (plain http to loopback, for the emulator), no
credentials, query or fragment; the refusal never prints the part that may hold a secret."""

import pytest

from components.ctyun_hcc import config as cfg
from components.ctyun_hcc.api.transport import resolve_endpoint
from components.inference.errors import ConfigError
from components.config.shared import parse_settings

SHARED = parse_settings({"target": "ctyun-hcc", "nodes": "4"}, "ctyun-hcc")
SECRET = "Pa55-w0rd.x"


def parse(endpoint):
    return cfg.parse_hcc_config({"endpoint": endpoint}, SHARED)


@pytest.mark.parametrize("url", ["https://cthpc.example:8443", "https://cthpc.example/base/",
                                 "http://127.0.0.1:9001", "http://localhost:9001",
                                 "http://[::1]:9001"])
def test_https_and_loopback_http_are_accepted(url):
    assert parse(url).endpoint == url
    assert resolve_endpoint("hpc", url, env={}) == url.rstrip("/")


@pytest.mark.parametrize("url, problem", [
    (f"https://ops:{SECRET}@cthpc.example", "carries credentials"),
    (f"https://{SECRET}@cthpc.example:8443/x", "carries credentials"),
    (f"https://ops:{SECRET}/@cthpc.example", "carries credentials"),
    (f"ops:{SECRET}@cthpc.example", "carries credentials"),
    (f"https://cthpc.example/?token={SECRET}", "has a query or a fragment"),
    (f"https://cthpc.example/#{SECRET}", "has a query or a fragment"),
    ("http://cthpc.example", "is not https"),
    ("http://10.0.0.5:8080", "is not https"),
    ("ftp://cthpc.example", "is not an http(s) URL"),
    ("https://cthpc.example:99999", "is not an http(s) URL"),
])
def test_refused_without_printing_the_credential(url, problem):
    for key, call in (("ctyun:endpoint", lambda: parse(url)),
                      ("CTYUN_ENDPOINT", lambda: resolve_endpoint(
                          "vpc", env={"CTYUN_ENDPOINT": url}))):
        with pytest.raises(ConfigError) as err:
            call()
        msg = str(err.value)
        assert msg.startswith(f"{key}=") and problem in msg, msg
        assert SECRET not in msg and "ops:" not in msg, msg
