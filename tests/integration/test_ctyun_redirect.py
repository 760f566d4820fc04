"""Issue 21 item 8: a CTyun answer that redirects elsewhere never receives the signature.

Two real HTTP servers on loopback: the "gateway" answers 307 (and 302) to a second host, which
records every request. With requests' default (follow redirects), the second host got
`Eop-Authorization` and, on a 307, the signed body; the transport must refuse to follow.
"""

import http.server
import threading

import pytest

from components.ctyun_hcc.api.ehpc import CREATE_CLUSTER, LIST_CLUSTERS
from components.ctyun_hcc.api.errors import ApiError
from components.ctyun_hcc.api.transport import Credentials, RetryPolicy, Transport


def _server(handler):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.mark.parametrize("code", [302, 307, 308])
def test_a_redirect_to_another_host_is_not_followed(code):
    seen = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(dict(self.headers))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"statusCode": 800, "returnObj": {}}')

        do_POST = do_GET

        def log_message(self, *a):
            pass

    other = _server(Elsewhere)

    class Gateway(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(code)
            self.send_header("Location", f"http://localhost:{other.server_port}/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *a):
            pass

    gw = _server(Gateway)
    t = Transport(Credentials("AK-TEST-0001", "SK-TEST-SECRET-0001"),
                  endpoint=f"http://127.0.0.1:{gw.server_port}", retry=RetryPolicy(max_attempts=1))
    try:
        for op, kw in ((LIST_CLUSTERS, {"params": {"regionID": "r1"}}),
                       (CREATE_CLUSTER, {"body": {"regionID": "r1"}})):
            with pytest.raises(ApiError, match="redirected to localhost; not followed") as e:
                t.call(op, **kw)
            assert e.value.http_status == code
        assert seen == []
    finally:
        gw.shutdown()
        other.shutdown()
