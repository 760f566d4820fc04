"""The config value grammars (components/config/values.py): one spelling per kind of value, the
same for every key of every target, and refusals that quote the value as the user wrote it.

The cross-parser tables below are the guard against drift: every integer key and every flag of
the shared settings, the aws-eks target, the CTyun cluster and the CTyun bootstrap is fed the
same spellings; a parser with its own copy of a helper (int() takes '١', a flag without `yes`)
fails here.
"""

import ast
import pytest
from hypothesis import assume, example, given, settings, strategies as st

from components.accept.sizing import parse_accept_load
from components.aws_eks import config as aws
from components.config import values as g, values as v
from components.config.shared import parse_settings
from components.ctyun_hcc import config as hcc
from components.ctyun_hcc.serve_config import parse_serve_config
from components.inference.errors import ConfigError, Default, NOT_SHOWN, PlanError, shown
from components.program import pipeline


K = "kimi-k3:x"
#: digits that are not ASCII: int() and float() take them, the grammar does not
FOREIGN_DIGITS = st.characters(whitelist_categories=("Nd",)).filter(lambda c: c not in "0123456789")
ONE_LINE = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
CTYUN_BASE = {"regionId": "bb9fdb42056f11eda1610242ac110002", "azName": "az1"}
VPC = {"vpcId": "vpc-0123456789abcdef0",
       "privateSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1"}


def shared(target="aws-eks", **kw):
    return parse_settings({"target": target, **kw}, "s")


def aws_cfg(**kw):
    return aws.parse(shared(**kw))


def ctyun_cfg(**kw):
    return hcc.parse_hcc_config({**CTYUN_BASE, **kw}, shared("ctyun-hcc"))


def plan_and_launch(s):
    """The program's planning step (components/program/pipeline.py) for shared settings `s`,
    with the target's config parsed from its keys alone (no Pulumi config)."""
    from components.aws_eks.target import EksTargetConfig
    from components.ctyun_hcc.target import HccTargetConfig
    from components.program.contract import StackSettings
    from components.program.registry import load_target

    cfg = (EksTargetConfig(aws.parse(s), "us-east-2", {}) if s.target == "aws-eks" else
           HccTargetConfig(parse_serve_config(dict(s.target_config), model_port=s.port),
                           hcc.parse_hcc_config(CTYUN_BASE, s)))
    return pipeline.plan_and_launch(load_target(s.target), StackSettings(s, cfg))


# ------------------------------------------------------------------ integers

@given(st.integers(min_value=-10**12, max_value=10**12))
def test_every_decimal_integer_reads_back(n):
    assert v.integer(K, str(n)) == n
    assert v.integer(K, f"  {n}\t") == n
    assert v.integer(K, n) == n


@given(st.integers(min_value=0, max_value=10**9))
def test_underscores_between_digit_groups_are_read_as_in_python(n):
    assert v.integer(K, f"{n:_}") == n


@given(st.text(alphabet="0123456789", min_size=0, max_size=3), FOREIGN_DIGITS,
       st.text(alphabet="0123456789", max_size=3))
@example("", "١", "")  # ARABIC-INDIC DIGIT ONE: int('١') == 1
@example("2", "²", "")  # SUPERSCRIPT TWO is a digit to str.isdigit, not to int()
def test_an_integer_with_any_non_ascii_digit_is_refused_as_written(before, digit, after):
    text = before + digit + after
    with pytest.raises(ConfigError) as e:
        v.integer(K, text)
    assert e.value.problem == "is not an integer" and e.value.value == text
    assert str(e.value).startswith(f"{K}={text!r} is not an integer; give an integer")


@pytest.mark.parametrize("text", ["4x", "12.5", "1e3", "+4", "0x10", "1__0", "_1", "1_", "", " ", "true"])
def test_other_integer_spellings_are_refused(text):
    with pytest.raises(ConfigError, match="is not an integer"):
        v.integer(K, text)


def test_a_size_suffix_gets_the_hint():
    with pytest.raises(ConfigError, match=r"\(write 131072, not 128K\)$"):
        v.integer(K, "128K")


@given(st.integers(min_value=-1000, max_value=1000), st.integers(0, 100), st.integers(0, 100))
def test_ranges_are_inclusive_and_quote_the_number_as_typed(n, lo, width):
    hi = lo + width
    text = f"0{n}" if n >= 0 else str(n)  # a leading zero stays as typed in the refusal
    if lo <= n <= hi:
        assert v.integer(K, text, lo, hi) == n
    else:
        with pytest.raises(ConfigError) as e:
            v.integer(K, text, lo, hi)
        assert str(e.value) == f"{K}={text} is out of range; use {lo} to {hi}"


# ------------------------------------------------------------------ booleans

@given(st.sampled_from(v.TRUE_WORDS + v.FALSE_WORDS), st.data())
def test_every_flag_spelling_in_any_case(word, data):
    cased = "".join(data.draw(st.sampled_from([c.lower(), c.upper()])) for c in word)
    assert v.boolean(K, f" {cased} ") is (word in v.TRUE_WORDS)


@given(ONE_LINE)
def test_anything_else_is_not_a_flag(text):
    assume(text.strip().lower() not in v.TRUE_WORDS + v.FALSE_WORDS)
    with pytest.raises(ConfigError) as e:
        v.boolean(K, text)
    assert str(e.value) == f"{K}={shown(text)} is not a boolean; use true or false"


# ------------------------------------------------------------------ numbers

@given(st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_finite_numbers_read_back(f):
    assert v.number(K, repr(f)) == f


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-1e400"])
def test_non_finite_numbers_are_refused_as_such(text):
    with pytest.raises(ConfigError) as e:
        v.number(K, text)
    assert e.value.problem == "is not finite"


@given(st.text(alphabet="0123456789.", max_size=4), FOREIGN_DIGITS)
def test_numbers_in_other_digits_are_refused(head, digit):
    with pytest.raises(ConfigError, match="is not a number"):
        v.number(K, head + digit)


# ------------------------------------------------------------------ lists, CIDRs, JSON, time

@pytest.mark.parametrize("text,want", [
    ("203.0.113.0/24, 198.51.100.7/32,", ("203.0.113.0/24", "198.51.100.7/32")),
    ('["2001:DB8::/32"]', ("2001:db8::/32",)), (["203.0.113.0/24"], ("203.0.113.0/24",)),
    ("  ", ()), ("", ()), ([], ()), (None, ()),
])
def test_cidr_lists_in_every_spelling(text, want):
    assert v.cidrs(K, text) == want


@pytest.mark.parametrize("text,problem", [
    ('["a"', "is not a JSON list"), ('{"a": 1}', "is not a CIDR"), ("10.0.0.1/8", "has host bits set"),
])
def test_cidr_refusals(text, problem):
    with pytest.raises(ConfigError, match=problem):
        v.cidrs(K, text)


def test_times_are_read_in_utc():
    assert v.instant(K, "2026-12-01T19:30:00+08:00") == "2026-12-01T11:30:00Z"
    assert v.instant(K, "2026-12-01T11:30") == "2026-12-01T11:30:00Z"
    with pytest.raises(ConfigError, match="is not a time"):
        v.instant(K, "tomorrow")


def test_json_values():
    assert v.json_value(K, '{"a": 1}') == {"a": 1} and v.json_value(K, [1]) == [1]
    with pytest.raises(ConfigError, match="is not valid JSON"):
        v.json_value(K, "{bad")


@pytest.mark.parametrize("check,text", [
    (v.served_model_name, "Kimi-K3\n"), (v.slurm_name, "batch\n"), (v.file_name, "k3.sif\n"),
    (v.user_name, "root\n"), (v.http_url, "https://h/x\n"),
])
def test_a_trailing_newline_never_passes_a_name_grammar(check, text):
    """`$` alone matches before a final newline; the grammars match the whole value."""
    with pytest.raises(ConfigError):
        check(K, text)


# ------------------------------------------------------------------ how a value is shown

@given(ONE_LINE)
def test_a_value_is_shown_on_one_line_and_reads_back_as_written(text):
    s = shown(text)
    assert len(s.splitlines()) <= 1 and "\n" not in s
    assert s == text if v.NUMBER.fullmatch(text) else ast.literal_eval(s) == text


@pytest.mark.parametrize("value,want", [
    ("95", "95"), ("0.9", "0.9"), ("1_000", "1_000"), ("yes", "'yes'"), ("١", "'١'"), ("", "''"),
    (True, "true"), (False, "false"), (["0.0.0.0/0"], '["0.0.0.0/0"]'), ({"a": 1}, '{"a": 1}'),
    (NOT_SHOWN, "<not shown>"),
])
def test_shown_spells_values_as_a_stack_file_does(value, want):
    assert shown(value) == want


def test_unset_and_defaulted_keys_say_so():
    assert str(ConfigError(K, None, "fix", "is needed")) == f"{K} (not set) is needed; fix"
    assert str(ConfigError(K, Default(1), "fix", "is small")) == f"{K} (not set, default 1) is small; fix"


def test_with_value_keeps_the_class_and_the_rest():
    err = PlanError(K, 95.0, "use less", "is too much")
    again = err.with_value("95")
    assert type(again) is PlanError and str(again) == f"{K}=95 is too much; use less"
    assert again.fix == "use less" and err.value == 95.0


# ------------------------------------------------------------------ RawConfig

def test_raw_config_reads_defaults_and_quotes_as_written():
    src = v.RawConfig("kimi-k3", {"n": " 7 ", "blank": "   ", "secret": "hunter2"}, secret=["secret"])
    assert src.integer("n", 1) == 7 and src.integer("blank", 3) == 3 and src.integer("missing", 4) == 4
    assert not src.given("blank") and src.given("n")
    assert str(src.refuse("n", "fix", "is odd")) == "kimi-k3:n=' 7 ' is odd; fix"
    assert str(src.refuse("missing", "fix", "is needed")) == "kimi-k3:missing (not set) is needed; fix"
    assert str(src.refuse("secret", "fix", "is weak")) == "kimi-k3:secret=<not shown> is weak; fix"
    assert "hunter2" not in repr(src)


#: the refusal's own words: a "secret" that is part of them (hypothesis found 'ctyu') proves nothing
_REFUSAL = "ctyun:rootPassword=<not shown> is weak; set another"


@given(st.text(min_size=4, max_size=30).filter(lambda t: t.strip() and t not in _REFUSAL))
def test_a_secret_key_is_never_quoted(secret):
    src = v.RawConfig("ctyun", {"rootPassword": secret}, secret=["rootPassword"])
    err = src.refuse("rootPassword", "set another", "is weak")
    assert secret not in str(err) and err.value is NOT_SHOWN
    assert src.requote(ConfigError("ctyun:rootPassword", NOT_SHOWN, "f", "p")).value is NOT_SHOWN


def test_requote_replaces_a_typed_value_with_the_text_or_says_unset():
    src = v.RawConfig("kimi-k3", {"gpuMemoryUtilization": "95"}, known=["gpuMemoryUtilization", "nodes"])
    typed = ConfigError("kimi-k3:gpuMemoryUtilization", 95.0, "use 0.5 to 0.98", "is out of range")
    assert str(src.requote(typed)).startswith("kimi-k3:gpuMemoryUtilization=95 is out of range")
    unset = ConfigError("kimi-k3:nodes", 1, "use at least 4", "cannot hold")
    assert str(src.requote(unset)).startswith("kimi-k3:nodes (not set, default 1) cannot hold")
    other = ConfigError("kimi-k3:capacityEarliestStart", -60, "f", "is in the past")
    assert src.requote(other) is other  # not a key this config answers for
    assert src.requote(ConfigError("ctyun:nodes", 1, "f", "p")).value == 1


# ------------------------------------------------------------------ the drift, across parsers

#: (parser, key, other keys it needs): every integer key of every parser
INTEGER_KEYS = [
    ("shared", "nodes", {}), ("shared", "maxModelLen", {}), ("shared", "maxNumSeqs", {}),
    ("shared", "maxNumBatchedTokens", {}), ("shared", "visionChunksPerPrompt", {}), ("shared", "port", {}),
    ("aws", "replicas", {}), ("aws", "capacityInstanceCount", {}), ("aws", "capacityDurationHours", {}),
    ("aws", "systemNodeCount", {}), ("aws", "rootVolumeGib", {}),
    ("ctyun", "storageSizeGb", {}), ("ctyun", "eipBandwidthMbps", {}), ("ctyun", "systemDiskSizeGb", {}),
    ("ctyun", "cloudSystemDiskSizeGb", {"cloudSystemDiskType": "SSD"}),
    ("ctyun", "cycleCount", {"onDemand": "false", "cycleType": "MONTH"}),
    ("ctyun", "createTimeoutS", {}), ("ctyun", "updateTimeoutS", {}), ("ctyun", "deleteTimeoutS", {}),
    ("ctyun", "lostAnswerWaitS", {}), ("ctyun", "pollIntervalS", {}),
    ("serve", "sshPort", {}),
]
#: (parser, key, other keys it needs, where the parsed flag is): every flag of every parser
FLAG_KEYS = [
    ("shared", "streamWeights", {}, lambda r: r.stream_weights),
    ("shared", "allowInternet", {}, lambda r: r.allow_internet),
    ("aws", "privateApi", VPC, lambda r: r.private_api),
    ("aws", "keepWeightsMirror", {}, lambda r: r.weights.keep_mirror),
    ("ctyun", "masterInCompute", {}, lambda r: r.master_in_compute),
    ("ctyun", "onDemand", {"cycleType": "MONTH", "cycleCount": "1"}, lambda r: r.on_demand),
    ("ctyun", "publicIp", {}, lambda r: r.eip_bandwidth_mbps > 0),
    ("serve", "mountDisks", {}, lambda r: r.mount_disks),
    ("serve", "monitoring", {}, lambda r: r.monitoring),
]
PARSERS = {
    "shared": lambda **kw: shared(**kw),
    "aws": aws_cfg,
    "ctyun": ctyun_cfg,
    "serve": lambda **kw: parse_serve_config(kw),
}


def _key(where, name):
    return f"ctyun:{name}" if where == "ctyun" else f"kimi-k3:{name}"


@pytest.mark.parametrize("where,name,extra", INTEGER_KEYS, ids=[f"{w}-{n}" for w, n, _ in INTEGER_KEYS])
@pytest.mark.parametrize("text", ["١", "٢٤", "²", "4x"])
def test_every_integer_key_refuses_what_int_would_take(where, name, extra, text):
    """`kimi-k3:replicas='١'` was read as 1 while `kimi-k3:nodes='١'` was refused."""
    with pytest.raises(ConfigError) as e:
        PARSERS[where](**extra, **{name: text})
    assert str(e.value).startswith(f"{_key(where, name)}={text!r} is not an integer; give an integer")


@pytest.mark.parametrize("where,name,extra,get", FLAG_KEYS, ids=[f"{w}-{n}" for w, n, _, _ in FLAG_KEYS])
@pytest.mark.parametrize("word,want", [("yes", True), ("No", False), ("1", True), ("FALSE", False),
                                       ("true", True), ("0", False)])
def test_every_flag_takes_the_same_words(where, name, extra, get, word, want):
    """`mountDisks=yes` was refused while every other flag took `yes`."""
    assert get(PARSERS[where](**extra, **{name: word})) is want


@pytest.mark.parametrize("where,name,extra,get", FLAG_KEYS, ids=[f"{w}-{n}" for w, n, _, _ in FLAG_KEYS])
def test_every_flag_refuses_the_same_words(where, name, extra, get):
    with pytest.raises(ConfigError) as e:
        PARSERS[where](**extra, **{name: "maybe"})
    assert str(e.value).startswith(f"{_key(where, name)}='maybe' is not a boolean; use true or false")


def test_the_acceptance_load_counts_are_ascii_too():
    with pytest.raises(ConfigError, match="is not a load size"):
        parse_accept_load("١٠")
    assert parse_accept_load(" 64X16 ") == "64x16"


# ------------------------------------------------------------------ quoted as written, end to end

def test_an_unset_key_is_said_to_be_unset_not_none():
    with pytest.raises(ConfigError) as e:
        aws_cfg(weightsSource="s3")
    assert str(e.value).startswith("kimi-k3:weightsS3Uri (not set) is needed")
    assert "None" not in str(e.value)


@pytest.mark.parametrize("word", ["yes", "True", "1"])
def test_a_flag_is_quoted_as_typed(word):
    with pytest.raises(ConfigError) as e:
        aws_cfg(privateApi=word, apiAccessCidrs="203.0.113.10/32")
    assert str(e.value).startswith(f"kimi-k3:privateApi={shown(word)} conflicts with kimi-k3:apiAccessCidrs")


@pytest.mark.parametrize("target", ["aws-eks", "ctyun-hcc"])
@pytest.mark.parametrize("text", ["95", "1", "0.10", "1e0"])
def test_a_planner_refusal_quotes_the_number_as_typed(target, text):
    """The planner sees 95.0; the program requotes its refusal with what the user wrote."""
    with pytest.raises(ConfigError) as e:
        plan_and_launch(shared(target, gpuMemoryUtilization=text))
    assert str(e.value).startswith(f"kimi-k3:gpuMemoryUtilization={text} is out of range; ")


def test_a_planner_refusal_of_a_default_says_the_key_is_unset():
    with pytest.raises(PlanError) as e:
        plan_and_launch(shared("aws-eks", accelerator="h100"))
    assert str(e.value).startswith("kimi-k3:nodes (not set, default 1) cannot hold ")


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1,
               max_size=20))
@settings(max_examples=50, deadline=None)
def test_a_refused_root_password_is_never_echoed(tail):
    pw = "K3-" + tail  # many break CTyun's rules (length, characters, runs, 'root'), some pass
    try:
        ctyun_cfg(rootPassword=pw)
    except ConfigError as e:
        assert str(e).startswith("ctyun:rootPassword=<not shown> ") and pw not in str(e)


def test_a_missing_bastion_key_is_unset_not_hidden():
    with pytest.raises(ConfigError) as e:
        parse_serve_config({"sshBastion": "jump@203.0.113.5"})
    assert str(e.value).startswith("kimi-k3:sshBastionPrivateKey (not set) is needed with kimi-k3:sshBastion")


def test_a_fee_is_a_number_like_any_other():
    assert aws_cfg(maxUpfrontFeeUsd="120_000").capacity.max_upfront_fee_usd == 120000.0
    assert aws_cfg().capacity.max_upfront_fee_usd == 0.0


# ---- merged from test_grammar_behaviour.py:
# The config grammars at their edges: the longest legal value accepted, one more refused, and
# the exact refusal (key, value, problem; fix) for each grammar (components/config/values.py).

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
