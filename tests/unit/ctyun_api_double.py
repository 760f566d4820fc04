"""Test double for the network under the CTyun transport: a requests adapter answering from a
script (the same transport runs over real HTTP against the emulator in tests/integration)."""

from __future__ import annotations

import json
import random
from urllib.parse import parse_qsl, urlsplit

import requests
from requests.adapters import BaseAdapter

from components.ctyun_hcc.api.transport import Credentials, Transport

AK, SK = "AKtest", "SKsecret-value-xyz"


def ok(ret=None):
    return 200, {"statusCode": 800, "error": "", "message": "成功", "returnObj": ret}


def refused(code="Hpc.ParamCheck.NotBlank", message="regionID is blank", key="error"):
    return 200, {"statusCode": 900, key: code, "message": message, "returnObj": None}


class ScriptedNetwork(BaseAdapter):
    """Each request pops the next scripted answer: (status, doc), bytes, or an exception."""

    def __init__(self, script=()):
        super().__init__()
        self.script = list(script)
        self.requests = []

    def send(self, request, **kwargs):
        self.requests.append(request)
        step = self.script.pop(0)
        if callable(step) and not isinstance(step, tuple):
            step = step(request)
        if isinstance(step, Exception):
            raise step
        status, doc = step
        resp = requests.Response()
        resp.status_code = status
        resp._content = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        resp.request = request
        resp.url = request.url
        return resp

    def close(self):
        pass

    def sent(self, i=-1):
        """(method, path, query dict, body dict|None) of request i."""
        r = self.requests[i]
        u = urlsplit(r.url)
        body = json.loads(r.body) if r.body else None
        return r.method, u.path, dict(parse_qsl(u.query, keep_blank_values=True)), body


def transport(script=(), **kw):
    net = ScriptedNetwork(script)
    session = requests.Session()
    session.mount("https://", net)
    sleeps = []
    t = Transport(credentials=Credentials(AK, SK), endpoint="https://api.test", session=session,
                  sleep=sleeps.append, rng=random.Random(7), **kw)
    return t, net, sleeps
