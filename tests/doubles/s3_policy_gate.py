"""Test double of S3 authorizing one identity-based IAM policy, as a proxy in front of moto's S3.

Why: moto's S3 server enforces no policy by default, and its IAM mode reads no `s3:prefix`
(moto 5.2.5, iam/access_control.py and iam/utils.py `format_incoming_conditional_values`: only
`sts:ExternalId` reaches a condition), so neither shows what a pod's role may really do. This
proxy answers the way S3 is documented to, for exactly what kimi-k3's roles and scripts rely on:

- request -> action, resource and condition keys, from the Service Authorization Reference for
  Amazon S3 (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html):
  ListObjects/ListObjectsV2 and HeadBucket -> `s3:ListBucket` on `arn:aws:s3:::bucket`, with the
  condition key `s3:prefix` = the `prefix` query parameter (absent when it is not sent);
  GetObject and HeadObject -> `s3:GetObject` on `arn:aws:s3:::bucket/key`; PutObject,
  CreateMultipartUpload, UploadPart, CompleteMultipartUpload -> `s3:PutObject`; ListParts ->
  `s3:ListMultipartUploadParts`; AbortMultipartUpload -> `s3:AbortMultipartUpload`;
  DeleteObject -> `s3:DeleteObject`; ListMultipartUploads -> `s3:ListBucketMultipartUploads`.
  Any other request is denied (the double does not guess) and recorded in `unknown`.
- the condition key `s3:if-none-match` = the request's `If-None-Match` header, present on a
  PutObject or CompleteMultipartUpload that sends it and absent otherwise ("You can use the
  condition keys s3:if-match or s3:if-none-match ... For multipart uploads you must specify the
  s3:ObjectCreationOperation condition key to exempt the CreateMultipartUpload, UploadPart, and
  UploadPartCopy operations, as these APIs don't accept conditional headers": S3 User Guide,
  "Enforce conditional writes on Amazon S3 buckets",
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes-enforce.html).
- IAM's evaluation of one identity policy with Allow statements only (IAM User Guide, "Policy
  evaluation logic", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
  allowed iff a statement matches the action, the resource (`*`/`?` wildcards) and all of its
  conditions; "If the key that you specify in a policy condition is not present in the request
  context, the values do not match" (IAM User Guide, "IAM JSON policy elements: Condition",
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition.html).
  Operators: StringLike, StringEquals, and Null ("true": the key is absent from the request
  context, "false": it is present; IAM User Guide, "Condition operator to check existence of
  condition keys", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html)
  (others raise: not modelled).
- a missing key: "If you have the s3:ListBucket permission on the bucket, Amazon S3 returns an
  HTTP status code 404 Not Found error. If you don't have the s3:ListBucket permission, Amazon S3
  returns an HTTP status code 403 Access Denied error" (S3 API Reference, GetObject and
  HeadObject, https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html). The double
  evaluates that s3:ListBucket in the GET/HEAD request's own context, which has no `s3:prefix`
  (GetObject's condition keys in the Service Authorization Reference do not include it), so a
  prefix-conditioned grant does not count: the double's reading of the two documents.
Denials are answered as S3 does: 403 with an `AccessDenied` XML body (no body for HEAD).
Requests are path-style (`/bucket/key`): botocore uses path style for an IP endpoint.
"""

from __future__ import annotations

import fnmatch
import http.client
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Mapping, Optional, Tuple

ACCESS_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                 b'<Message>Access Denied</Message></Error>')
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


def _wild(pattern: str, value: str, case: bool = True) -> bool:
    """IAM's `*` (any run) and `?` (one character) wildcards; nothing else is special."""
    regex = fnmatch.translate(pattern.replace("[", "[[]"))
    return re.match(regex, value, 0 if case else re.IGNORECASE) is not None


def _list(v) -> List[str]:
    return v if isinstance(v, list) else [v]


def _condition_holds(cond: Mapping, context: Mapping[str, str]) -> bool:
    for op, keys in cond.items():
        for key, wanted in keys.items():
            if op == "Null":
                if (key not in context) != (str(wanted).lower() == "true"):
                    return False
                continue
            if key not in context:
                return False  # a key absent from the request context does not match
            have = context[key]
            if op == "StringLike":
                ok = any(_wild(w, have) for w in _list(wanted))
            elif op == "StringEquals":
                ok = have in _list(wanted)
            else:
                raise NotImplementedError(f"condition operator {op} is not modelled by this double")
            if not ok:
                return False
    return True


def allowed(policy: Mapping, action: str, resource: str, context: Mapping[str, str]) -> bool:
    """Does the identity policy allow `action` on `resource` in `context`?"""
    for st in policy["Statement"]:
        if st.get("Effect") != "Allow":
            raise NotImplementedError("only Allow statements are modelled by this double")
        if not any(_wild(a, action, case=False) for a in _list(st["Action"])):
            continue
        if not any(_wild(r, resource) for r in _list(st["Resource"])):
            continue
        if _condition_holds(st.get("Condition") or {}, context):
            return True
    return False


def request_action(method: str, bucket: str, key: str, query: Mapping[str, List[str]],
                   headers: Optional[Mapping[str, str]] = None) -> Optional[Tuple[str, str, Dict[str, str]]]:
    """(action, resource ARN, condition context) of one S3 request; None: not modelled."""
    bucket_arn, object_arn = f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/{key}"
    if not key:
        if method == "GET" and "uploads" in query:
            return "s3:ListBucketMultipartUploads", bucket_arn, {}
        if method == "GET" and not set(query) - {"list-type", "prefix", "delimiter", "max-keys",
                                                 "continuation-token", "start-after", "marker",
                                                 "encoding-type", "fetch-owner"}:
            ctx = {"s3:prefix": query["prefix"][0]} if "prefix" in query else {}
            return "s3:ListBucket", bucket_arn, ctx
        if method == "HEAD" and not query:
            return "s3:ListBucket", bucket_arn, {}
        return None
    if method in ("GET", "HEAD"):
        if "uploadId" in query:
            return "s3:ListMultipartUploadParts", object_arn, {}
        return "s3:GetObject", object_arn, {}
    if method == "PUT" or (method == "POST" and ("uploads" in query or "uploadId" in query)):
        conditional = method == "PUT" and "partNumber" not in query or method == "POST" and "uploadId" in query
        inm = (headers or {}).get("If-None-Match")
        return "s3:PutObject", object_arn, ({"s3:if-none-match": inm} if conditional and inm is not None else {})
    if method == "DELETE":
        return ("s3:AbortMultipartUpload" if "uploadId" in query else "s3:DeleteObject"), object_arn, {}
    return None


class PolicyGate:
    """A proxy on 127.0.0.1 that enforces `policy` in front of `upstream` (a LocalS3)."""

    def __init__(self, upstream, policy: Mapping):
        self.upstream, self.policy = upstream, policy
        self.denied: List[Tuple[str, str, str]] = []  # (method, path, action)
        self.unknown: List[Tuple[str, str]] = []
        gate = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1, so that a client's `Expect: 100-continue` (botocore sends it with every
            # PutObject body) is answered at once; under HTTP/1.0 the handler never answers it and
            # botocore waits a second before sending the body anyway (Python docs, http.server,
            # `handle_expect_100`: "When an HTTP/1.1 conformant server receives an Expect:
            # 100-continue request header it responds back with a 100 Continue"). Every answer
            # below carries Content-Length, as HTTP/1.1 keep-alive needs.
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = b""
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return out
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _deny(self):
                self.send_response(403)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(0 if self.command == "HEAD" else len(ACCESS_DENIED)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(ACCESS_DENIED)

            def _handle(self):
                body = self._body()
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.lstrip("/").split("/", 1)
                bucket, key = parts[0], urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
                query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
                what = request_action(self.command, bucket, key, query, self.headers)
                if what is None:
                    gate.unknown.append((self.command, self.path))
                    return self._deny()
                action, resource, ctx = what
                if not allowed(gate.policy, action, resource, ctx):
                    gate.denied.append((self.command, self.path, action))
                    return self._deny()
                status, headers, data = gate._forward(self.command, self.path, self.headers, body)
                if status == 404 and action == "s3:GetObject" and not allowed(
                        gate.policy, "s3:ListBucket", f"arn:aws:s3:::{bucket}", {}):
                    gate.denied.append((self.command, self.path, "404 without s3:ListBucket"))
                    return self._deny()
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in _HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _forward(self, method: str, path: str, headers, body: bytes):
        host, port = urllib.parse.urlsplit(self.upstream.endpoint).netloc.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            fwd = {k: v for k, v in headers.items() if k.lower() not in _HOP}
            fwd["Content-Length"] = str(len(body))
            conn.request(method, path, body=body if body or method in ("PUT", "POST") else None,
                         headers=fwd)
            resp = conn.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            conn.close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "PolicyGate":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def env(self, **extra) -> dict:
        """The upstream's environment for a script, with this gate as the S3 endpoint."""
        return {**self.upstream.env(**extra), "AWS_ENDPOINT_URL": self.endpoint}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-2",
                            aws_access_key_id="testing", aws_secret_access_key="testing")
