"""The config grammars at their edges: the longest legal value accepted, one more refused, and
the exact refusal (key, value, problem; fix) for each grammar (components/config/values.py)."""

import pytest

from components.config import values as g
from components.inference.errors import ConfigError, shown

K = "kimi-k3:x"
MODEL = ("is not a usable model name", "use up to 128 letters, digits and . _ : - / (one '/' at a time), "
         "starting with a letter or digit, e.g. Kimi-K3")
SLURM = ("is not a usable Slurm name", "use up to 64 letters, digits and . _ -, starting with a letter or digit")
FILE = ("is not a usable file name", "use letters, digits and . _ + - (no '/')")
USER = ("is not a user name", "use a login name such as root")
HOST = ("is not a host", "give a host name or an IP address")
#: a port is an integer key like any other (components/config/values.py `integer`); it had
#: its own wording ("is not a port") before
PORT = ("is out of range", "use 1 to 65535")
NOT_INTEGER = ("is not an integer", "give an integer")
URL = ("is not a usable URL", "give an http(s) URL of plain characters (percent-encode spaces and quotes)")
UNDER = ("give an absolute path under /home, /mnt, /data, /scratch, /share, /srv, /opt of letters, digits "
         "and . _ + -, e.g. /home/kimi-k3")
PIN = ("is not an SSH host key", "give the key as in known_hosts (ssh-ed25519 AAAA...) or its fingerprint "
       "(SHA256:..., from ssh-keygen -lf on the host)")


@pytest.mark.parametrize("fn,args,problem,fix", [
    ("served_model_name", ("_k3",), *MODEL), ("served_model_name", ("a/",), *MODEL),
    ("served_model_name", ("a//b",), *MODEL), ("served_model_name", ("K" * 129,), *MODEL),
    ("slurm_name", ("-x",), *SLURM), ("slurm_name", ("a" * 65,), *SLURM),
    ("file_name", ("a/b",), *FILE), ("file_name", ("..",), *FILE), ("file_name", (".",), *FILE),
    ("file_name", ("a" * 129,), *FILE),
    ("user_name", ("Root",), *USER), ("user_name", ("a" * 33,), *USER),
    ("host", ("-bad",), *HOST), ("host", ("a" * 254,), *HOST), ("host", ("a..b",), *HOST),
    ("host", (("a" * 63 + ".") * 3 + "a" * 62,), *HOST),  # 254 characters of legal labels
    ("host", ("a" * 64,), *HOST),  # a label is at most 63
    ("port", ("0",), *PORT), ("port", ("65536",), *PORT), ("port", ("x",), *NOT_INTEGER), ("port", ("123456",), *PORT),
    ("http_url", ("ftp://x",), *URL), ("http_url", ("http://a b",), *URL), ("http_url", ('http://h/"x"',), *URL),
    ("data_path", ("rel/x",), "is not an absolute path", UNDER),
    ("data_path", (None,), "is not an absolute path", UNDER),
    ("data_path", ("/home/../x",), "contains '.' or '..'", UNDER),
    ("data_path", ("/home/./x",), "contains '.' or '..'", UNDER),
    ("data_path", ("/home/a b",), "contains characters a path here may not have", UNDER),
    ("data_path", ("/etc/x",), "is not under a data directory", UNDER),
    ("data_path", ("/home",), "is not under a data directory", UNDER),
    ("data_path", ("/homes/x",), "is not under a data directory", UNDER),
    ("data_path", ("/x", None), "is too close to /", "give an absolute path of letters, digits and . _ + -, "
                                                     "e.g. /home/kimi-k3"),
    ("data_path", ("/srv/a", ("/srv",), 3), "is not under a data directory",
     "give an absolute path under /srv of letters, digits and . _ + -, e.g. /srv/kimi-k3"),
    ("host_key_pin", ("ssh-dss AAAA",), *PIN), ("host_key_pin", ("SHA256:short",), *PIN),
])
def test_refusals_name_the_key_the_value_the_problem_and_the_fix(fn, args, problem, fix):
    with pytest.raises(ConfigError) as e:
        getattr(g, fn)(K, *args)
    head = f"{K} (not set)" if args[0] is None else f"{K}={shown(args[0])}"
    assert str(e.value) == f"{head} {problem}; {fix}"
    assert (e.value.key, e.value.value) == (K, args[0])


def test_a_port_taken_by_another_service_collides():
    with pytest.raises(ConfigError) as e:
        g.port(K, "22", ((11025, "vLLM"), (22, "sshd")))
    assert str(e.value) == "kimi-k3:x=22 collides; pick another port (22 is sshd)"
    assert g.port(K, 2222, ((22, "sshd"),)) == 2222


@pytest.mark.parametrize("fn,value,want", [
    ("served_model_name", "K" * 128, "K" * 128), ("served_model_name", "moonshotai/Kimi-K3", "moonshotai/Kimi-K3"),
    ("served_model_name", "kimi-k3:w4a8", "kimi-k3:w4a8"),
    ("slurm_name", "a" * 64, "a" * 64), ("slurm_name", "9.x-y_z", "9.x-y_z"),
    ("file_name", "a" * 128, "a" * 128), ("file_name", "v+1.0_rc-2.sif", "v+1.0_rc-2.sif"),
    ("user_name", "a" * 32, "a" * 32), ("user_name", "_svc-1", "_svc-1"),
    ("host", "10.0.0.1", "10.0.0.1"), ("host", "2001:DB8::1", "2001:db8::1"), ("host", "kk3n1", "kk3n1"),
    ("host", ("a" * 63 + ".") * 3 + "a" * 61, ("a" * 63 + ".") * 3 + "a" * 61),  # 253 characters
    ("port", "1", 1), ("port", " 65535 ", 65535), ("port", 8080, 8080),
    ("http_url", "https://h.example:8443/v1?x=1&y=%20", "https://h.example:8443/v1?x=1&y=%20"),
    ("http_url", "http://10.0.0.1", "http://10.0.0.1"),
    ("data_path", "/home//kimi-k3/", "/home/kimi-k3"), ("data_path", "/opt/a.b+c_d-e", "/opt/a.b+c_d-e"),
    ("host_key_pin", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 root@host", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5"),
    ("host_key_pin", "SHA256:" + "A" * 43 + "=", "SHA256:" + "A" * 43),
])
def test_legal_values_at_the_edges_are_accepted_and_normalised(fn, value, want):
    assert getattr(g, fn)(K, value) == want


def test_data_path_roots_and_depth_are_the_callers():
    assert g.data_path(K, "/a/b", roots=None) == "/a/b"
    assert g.data_path(K, "/srv/a/b", ("/srv",), 3) == "/srv/a/b"
    assert g.data_path(K, "/mnt", ("/mnt",), 1) == "/mnt"


def test_optional_checks_only_a_given_value():
    assert g.optional(g.port, K, None) is None and g.optional(g.port, K, "") is None
    assert g.optional(g.port, K, "22", ((80, "http"),)) == 22
    with pytest.raises(ConfigError):
        g.optional(g.port, K, "22", ((22, "sshd"),))
