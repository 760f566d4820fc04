"""How a config value is written: one grammar per kind of value, for every key of every target.

Why one module: each parser used to carry its own integer and boolean helpers, and they drifted
(`kimi-k3:replicas` took an Arabic-Indic digit that `kimi-k3:nodes` refused; `mountDisks` refused
the `yes` every other flag took). Here each kind of value has exactly one spelling, documented
in docs/configuration.md ("Value forms"), and every parser reads its keys through `RawConfig`.

Two rules hold for every kind:
- surrounding whitespace is dropped; a key is unset when nothing is left (or its value is
  missing, or an empty list), and then takes its default; otherwise the text must match the
  grammar of its kind;
- a refusal (ConfigError) quotes the value as the user wrote it, or says the key is unset;
  never what Python made of it (`95.0`, `True`, `None`). Secret keys are never quoted.

The grammars for values that reach scripts, manifests or remote command lines (names, paths,
hosts, URLs, host keys) are deliberately narrow: the value is still quoted wherever it is used,
the grammar keeps scripts readable and refuses early. Each checker takes the config key so the
refusal names it, and returns the value (normalised where the docs say so). Patterns are
matched against the whole value (`fullmatch`: a `$` alone would let a trailing newline through).
"""

from __future__ import annotations

import ipaddress
import json
import math
import posixpath
import re
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, List, Mapping, Optional, Pattern, Sequence, Tuple

from ..inference.errors import NOT_SHOWN, ConfigError, Default

# ------------------------------------------------------------------ the text of a value

#: integers: ASCII digits only, `_` between digit groups, an optional leading `-` (so that -1
#: is refused as out of range, not as a non-number); `int()` alone would take '١' or '²'
INTEGER = re.compile(r"^-?[0-9]+(?:_[0-9]+)*$")
#: decimal numbers: an integer part, a fraction, an exponent; ASCII only (no nan, inf, '١٫٥')
NUMBER = re.compile(r"^-?(?:[0-9]+(?:_[0-9]+)*(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
#: what float() would take for "not a number" and "infinity": refused as not finite
NOT_FINITE = re.compile(r"[-+]?(?:nan|inf|infinity)", re.IGNORECASE)
#: the one set of boolean spellings (case-insensitive), for every flag of every target
TRUE_WORDS = ("true", "yes", "1")
FALSE_WORDS = ("false", "no", "0")


def is_unset(value: object) -> bool:
    """Missing, blank text (empty or only whitespace), or an empty list: the key takes its
    default."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, (list, tuple)) and len(value) == 0)


def text_of(value: object) -> str:
    """The text of a raw value, surrounding whitespace dropped; a non-text value (a number or a
    flag from a structured stack file) as JSON spells it."""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value)


# ------------------------------------------------------------------ scalars

def integer(key: str, value: object, lo: Optional[int] = None, hi: Optional[int] = None) -> int:
    """A whole number in [lo, hi] (either bound optional)."""
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        text = text_of(value)
        if not INTEGER.fullmatch(text):
            hint = " (write 131072, not 128K)" if text[-1:] in ("k", "K", "m", "M") else ""
            raise ConfigError(key, value, f"give an integer{hint}", "is not an integer")
        n = int(text.replace("_", ""))
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise ConfigError(key, value, _range_fix(lo, hi), "is out of range")
    return n


def _range_fix(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"use {lo} to {hi}"
    return f"use at least {lo}" if lo is not None else f"use at most {hi}"


def number(key: str, value: object, example: str = "0.9", unit: str = "") -> float:
    """A finite decimal number (`0.9`, `120000`, `1e3`); `unit` and `example` shape the advice
    (`give a number{unit} such as {example}`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = float(value)
    else:
        text = text_of(value)
        if NOT_FINITE.fullmatch(text):
            f = math.inf
        elif not NUMBER.fullmatch(text):
            raise ConfigError(key, value, f"give a number{unit} such as {example}", "is not a number")
        else:
            f = float(text.replace("_", ""))
    if not math.isfinite(f):
        raise ConfigError(key, value, f"give a finite number{unit} such as {example}", "is not finite")
    return f


def number_in(key: str, value: object, lo: float, hi: float, example: str, unit: str = "") -> float:
    """A finite decimal number from `lo` to `hi` of `unit` (a plain word: "seconds").
    Command-line flags use it too: the error quotes the flag as typed (`--timeout=-1`), not
    Python's spelling of what it parsed (`-1.0`)."""
    f = number(key, value, example, f" of {unit}" if unit else "")
    if not lo <= f <= hi:
        raise ConfigError(key, value, f"use {lo:g} to {hi:g}{' ' + unit if unit else ''}, e.g. "
                          f"{example}", "is out of range")
    return f


def boolean(key: str, value: object) -> bool:
    """true/false, yes/no, 1/0 in any case: the same words for every flag."""
    text = text_of(value).lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ConfigError(key, value, "use true or false", "is not a boolean")


def choice(key: str, value: object, options: Sequence[str],
           problem: str = "is not a documented value", fix: Optional[str] = None) -> str:
    """One of `options`, spelt exactly as listed."""
    text = text_of(value)
    if text not in options:
        raise ConfigError(key, value, fix or f"use one of {', '.join(options)}", problem)
    return text


def matching(key: str, value: object, pattern: Pattern[str], fix: str, problem: str) -> str:
    """Text matching `pattern` (ids, cluster names, versions...)."""
    text = text_of(value)
    if not pattern.fullmatch(text):
        raise ConfigError(key, value, fix, problem)
    return text


def instant(key: str, value: object) -> str:
    """An ISO-8601 time (`2026-12-01T11:30:00Z`; no zone = UTC), returned in UTC with `Z`."""
    text = text_of(value)
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(key, value, "give an ISO-8601 time such as 2026-12-01T11:30:00Z",
                          "is not a time") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_value(key: str, value: object) -> Any:
    """A JSON value given as text (a structured stack value arrives already decoded)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise ConfigError(key, value, "give a JSON value", "is not valid JSON") from None


# ------------------------------------------------------------------ lists and networks

def items(key: str, value: object, fix: str, problem: str = "is not a list") -> List[object]:
    """A list: a JSON list, or comma-separated text; blank items are dropped, text items are
    stripped (an item that is not text is returned as it is, for its grammar to refuse)."""
    if isinstance(value, str):
        if value.strip().startswith("["):
            try:
                value = json.loads(value)
            except ValueError:
                raise ConfigError(key, value, fix, "is not a JSON list") from None
        else:
            value = value.split(",")
    if not isinstance(value, (list, tuple)):
        raise ConfigError(key, value, fix, problem)
    out = [i.strip() if isinstance(i, str) else i for i in value]
    return [i for i in out if i != ""]


def cidr(key: str, value: object, fix: str) -> ipaddress._BaseNetwork:
    """One network in CIDR notation, without host bits (`10.0.0.1/8` is refused: it is
    ambiguous between 10.0.0.0/8 and 10.0.0.1/32)."""
    if not isinstance(value, str):
        raise ConfigError(key, value, fix, "is not a CIDR")
    try:
        return ipaddress.ip_network(value.strip(), strict=True)
    except ValueError as e:
        raise ConfigError(key, value, fix, f"is not a CIDR ({e})") from None


CIDRS_FIX = 'give CIDRs such as ["203.0.113.0/24"] or 203.0.113.0/24,198.51.100.7/32'


def cidrs(key: str, value: object) -> Tuple[str, ...]:
    """A list of CIDRs (see `items`), normalised; empty when unset."""
    if is_unset(value):
        return ()
    return tuple(str(cidr(key, i, CIDRS_FIX))
                 for i in items(key, value, CIDRS_FIX, "is not a list of CIDRs"))


# ------------------------------------------------------------------ what reaches scripts

#: what `servedModelName` may be: a model id as OpenAI clients send it (`Kimi-K3`,
#: `moonshotai/Kimi-K3`, `kimi-k3:w4a8`), nothing a shell, a URL or Kubernetes would interpret
SERVED_MODEL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._:-]|/(?!/)){0,127}$")
#: Slurm partition / job names, Apptainer instance prefixes, SIF base names
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
#: POSIX portable user names (useradd's default rule)
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"^{HOST_LABEL}(?:\.{HOST_LABEL})*$")
#: path segments: letters, digits and . _ + - (no spaces, no quotes, no `$`, no glob characters)
PATH_SEGMENT = re.compile(r"^[A-Za-z0-9._+-]+$")
#: an http(s) URL of RFC 3986 characters only (no spaces, quotes or control characters)
HTTP_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?"
                      r"(?:\?[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*)?$")
#: an OCI content digest of an image manifest: `sha256:` + 64 lower-case hex
#: (opencontainers/image-spec descriptor.md at commit 023b0770450c, "Digests": `algorithm ":"
#: encoded`, "sha256 will only use hex encoded digests", example `sha256:6c3c...9b3b`);
#: `image@digest` makes the runtime pull exactly that manifest
IMAGE_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
#: a model repository's commit as the Hugging Face Hub names it (`sha` of
#: GET /api/models/{repo}/revision/{rev}: 40 lower-case hex digits; also the pattern of
#: HyperPod's huggingFaceModel.commitSHA, tests/contracts/hyperpod/iec_facts.yaml)
MODEL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: a branch or tag name (what the download tools take besides a commit): letters, digits,
#: . _ - and single slashes, never starting with `-` (it would read as an option)
MODEL_REF = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]|/(?!/)){0,127}$")
#: an https URL of the same characters (no user info: '@' is not a host character): what is
#: fetched to run as root (the SIF image) is never fetched over plain http
HTTPS_URL = re.compile(r"^https://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%!$&'()*+,;=:@/-]*)?"
                       r"(?:\?[A-Za-z0-9._~%!$&'()*+,;=:@/?-]*)?$")
#: a SHA-256 digest as sha256sum prints it
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
#: an SSH host key as in known_hosts (`TYPE BASE64`), or its SHA256 fingerprint (`ssh-keygen -l`)
HOST_KEY = re.compile(r"^(?:ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) [A-Za-z0-9+/]+={0,3}$")
HOST_KEY_FINGERPRINT = re.compile(r"^SHA256:[A-Za-z0-9+/]{43}$")
#: where data and scripts may live on a node: shared storage and data disks, never system dirs
DATA_ROOTS = ("/home", "/mnt", "/data", "/scratch", "/share", "/srv", "/opt")


def served_model_name(key: str, value: str) -> str:
    if not SERVED_MODEL_NAME.fullmatch(value) or value.endswith("/"):
        raise ConfigError(key, value, "use up to 128 letters, digits and . _ : - / (one '/' at a "
                          "time), starting with a letter or digit, e.g. Kimi-K3",
                          "is not a usable model name")
    return value


def model_revision(key: str, value: str) -> str:
    """`kimi-k3:modelRevision`: a commit (what pins) or a branch/tag name; no `..`, no final `/`
    (both refused by git's ref rules, `git help check-ref-format`)."""
    if not MODEL_REF.fullmatch(value) or ".." in value or value.endswith(("/", ".lock")):
        raise ConfigError(key, value, "give the commit to serve (40 hex digits, from the model "
                          "repository's history) or a branch or tag name", "is not a revision")
    return value


def slurm_name(key: str, value: str) -> str:
    if not SLURM_NAME.fullmatch(value):
        raise ConfigError(key, value, "use up to 64 letters, digits and . _ -, starting with a "
                          "letter or digit", "is not a usable Slurm name")
    return value


def file_name(key: str, value: str) -> str:
    if not FILE_NAME.fullmatch(value) or value in (".", ".."):
        raise ConfigError(key, value, "use letters, digits and . _ + - (no '/')",
                          "is not a usable file name")
    return value


def user_name(key: str, value: str) -> str:
    if not USER_NAME.fullmatch(value):
        raise ConfigError(key, value, "use a login name such as root", "is not a user name")
    return value


def host(key: str, value: str) -> str:
    """A DNS name or an IP address (IPv6 without brackets)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if not HOST_NAME.fullmatch(value) or len(value) > 253:
        raise ConfigError(key, value, "give a host name or an IP address", "is not a host")
    return value


def port(key: str, value: object, reserved: Iterable[Tuple[int, str]] = (), lo: int = 1) -> int:
    """A TCP port, lo-65535 (an integer by `integer`), not one of `reserved` (port, what)."""
    n = integer(key, value, lo, 65535)
    for taken, what in reserved:
        if n == taken:
            raise ConfigError(key, value, f"pick another port ({taken} is {what})", "collides")
    return n


def http_url(key: str, value: str) -> str:
    if not HTTP_URL.fullmatch(value):
        raise ConfigError(key, value, "give an http(s) URL of plain characters (percent-encode "
                          "spaces and quotes)", "is not a usable URL")
    return value


def https_url(key: str, value: str) -> str:
    if not HTTPS_URL.fullmatch(value):
        raise ConfigError(key, value, "give an https:// URL of plain characters (percent-encode "
                          "spaces and quotes)", "is not a usable https URL")
    return value


def sha256_hex(key: str, value: str) -> str:
    if not SHA256_HEX.fullmatch(value):
        raise ConfigError(key, value, "give the 64 lower-case hex digits `sha256sum FILE` prints",
                          "is not a SHA-256 digest")
    return value


def data_path(key: str, value: str, roots: Optional[Tuple[str, ...]] = DATA_ROOTS,
              min_depth: int = 2) -> str:
    """An absolute path under one of `roots` (None: any), at least `min_depth` segments deep;
    normalised (repeated and trailing '/' removed). `.` and `..` segments are refused, not
    resolved: a path that needs them is not the path the user meant to give."""
    where = f"under {', '.join(roots)} " if roots else ""
    fix = (f"give an absolute path {where}of letters, digits and . _ + -, "
           f"e.g. {(roots or DATA_ROOTS)[0]}/kimi-k3")
    if not isinstance(value, str) or not value.startswith("/"):
        raise ConfigError(key, value, fix, "is not an absolute path")
    segments = [s for s in value.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise ConfigError(key, value, fix, "contains '.' or '..'")
    if not all(PATH_SEGMENT.fullmatch(s) for s in segments):
        raise ConfigError(key, value, fix, "contains characters a path here may not have")
    norm = "/" + "/".join(segments)
    if len(segments) < min_depth or (
            roots and not any(norm == r or norm.startswith(r + "/") for r in roots)):
        raise ConfigError(key, value, fix, "is not under a data directory" if roots else
                          "is too close to /")
    assert posixpath.normpath(norm) == norm
    return norm


def host_key_pin(key: str, value: str) -> str:
    """A pinned host key: `ssh-ed25519 AAAA...` (a trailing comment is dropped) or
    `SHA256:...` (the fingerprint `ssh-keygen -lf` prints, without padding)."""
    text = " ".join(value.split()[:2]) if not value.startswith("SHA256:") else value.strip().rstrip("=")
    if any(not c.isprintable() for c in value) or not (
            HOST_KEY.fullmatch(text) or HOST_KEY_FINGERPRINT.fullmatch(text)):
        raise ConfigError(key, value, "give the key as in known_hosts (ssh-ed25519 AAAA...) or its "
                          "fingerprint (SHA256:..., from ssh-keygen -lf on the host)",
                          "is not an SSH host key")
    return text


def bastion(key: str, value: str) -> str:
    """`[user@]host[:port]`, each part by its grammar; returned normalised (`user@host:port`)."""
    m = re.fullmatch(r"^(?:([^@]*)@)?(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::([^:]*))?$", value)
    if not m:
        raise ConfigError(key, value, "write user@host:port, e.g. jump@203.0.113.5:22", "is not a host")
    user, name, port_text = m.group(1), m.group(2).strip("[]"), m.group(3)
    user = user_name(key, user) if user is not None else "root"
    name = host(key, name)
    port_n = port(key, port_text) if port_text is not None else 22
    return f"{user}@{'[' + name + ']' if ':' in name else name}:{port_n}"


def optional(check, key: str, value: Optional[str], *args) -> Optional[str]:
    return None if is_unset(value) else check(key, value, *args)


# ------------------------------------------------------------------ one namespace's raw config

class RawConfig:
    """The raw values of one config namespace (`kimi-k3`, `ctyun`), read through the grammars.

    Every read names the full key and falls back to its default when the key is unset; every
    refusal, including a rule between keys raised later with `refuse`, quotes the key's value as
    written (or says it is unset), and `<not shown>` for a key listed in `secret`.
    """

    def __init__(self, namespace: str, raw: Mapping[str, object], secret: Iterable[str] = (),
                 known: Optional[Iterable[str]] = None):
        self.namespace = namespace
        self.raw = dict(raw)
        self.secret = frozenset(secret)
        #: the keys this config answers for in `requote` (None: every key of the namespace)
        self.known = None if known is None else frozenset(known)

    def __repr__(self) -> str:  # never the values: some may be secrets
        return f"RawConfig({self.namespace!r}, keys={sorted(self.raw)!r})"

    def key(self, name: str) -> str:
        return f"{self.namespace}:{name}"

    def given(self, name: str) -> bool:
        return not is_unset(self.raw.get(name))

    def written(self, name: str, default: object = None) -> object:
        """What to quote for `name`: its value as written, `<not shown>` for a secret,
        `Default(default)` when unset with a default worth saying, None when unset."""
        if not self.given(name):
            return None if default is None else Default(default)
        return NOT_SHOWN if name in self.secret else self.raw[name]

    def refuse(self, name: str, fix: str, problem: str, default: object = None) -> ConfigError:
        """The error for a rule `name`'s value breaks (raise it)."""
        return ConfigError(self.key(name), self.written(name, default), fix, problem)

    def requote(self, err: ConfigError) -> ConfigError:
        """`err` with its value replaced by the key's value as written, when the key is ours:
        for refusals raised from typed values (the planner's), so the user sees what they wrote
        (`95`, not `95.0`), or that the key was unset and what its default was."""
        ns, _, name = err.key.partition(":")
        if ns != self.namespace or not name or err.value is NOT_SHOWN or (
                self.known is not None and name not in self.known):
            return err
        if self.given(name):
            return err.with_value(self.written(name))
        return err.with_value(None if err.value is None or isinstance(err.value, Default)
                              else Default(err.value))

    # reads: each returns the default when the key is unset ----------------------------------

    def _read(self, name: str, default, check: Callable, *args, **kw):
        value = self.raw.get(name)
        if is_unset(value):
            return default
        return check(self.key(name), value, *args, **kw)

    def text(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self._read(name, default, lambda _k, v: text_of(v))

    def integer(self, name: str, default: Optional[int] = None, lo: Optional[int] = None,
                hi: Optional[int] = None) -> Optional[int]:
        return self._read(name, default, integer, lo, hi)

    def number(self, name: str, default: Optional[float] = None, example: str = "0.9",
               unit: str = "") -> Optional[float]:
        return self._read(name, default, number, example, unit)

    def boolean(self, name: str, default: bool = False) -> bool:
        return self._read(name, default, boolean)

    def choice(self, name: str, options: Sequence[str], default: Optional[str],
               problem: str = "is not a documented value") -> Optional[str]:
        return self._read(name, default, choice, options, problem)

    def matching(self, name: str, pattern: Pattern[str], fix: str, problem: str,
                 default: Optional[str] = None) -> Optional[str]:
        return self._read(name, default, matching, pattern, fix, problem)

    def instant(self, name: str) -> Optional[str]:
        return self._read(name, None, instant)

    def json(self, name: str, default: Any = None) -> Any:
        return self._read(name, default, json_value)

    def cidrs(self, name: str) -> Tuple[str, ...]:
        return self._read(name, (), cidrs)

    def cidr(self, name: str, default: str, fix: str) -> ipaddress._BaseNetwork:
        return cidr(self.key(name), self.raw[name] if self.given(name) else default, fix)

    def ids(self, name: str, pattern: Pattern[str], example: str) -> Tuple[str, ...]:
        """A list of cloud ids, each matching `pattern` (`subnet-0123...`)."""
        fix = f"give ids such as {example}"
        return tuple(matching(self.key(name), i, pattern, fix, "is not a valid id")
                     for i in self._read(name, [], items, fix))

    def port(self, name: str, default: int, reserved: Iterable[Tuple[int, str]] = (),
             lo: int = 1) -> int:
        return self._read(name, default, port, reserved, lo)

    def checked(self, name: str, check: Callable, default=None, *args):
        """`check(key, text, *args)` (a grammar above) on the stripped text, else `default`;
        its refusal quotes the value as written."""
        def run(key, value):
            try:
                return check(key, text_of(value), *args)
            except ConfigError as err:
                raise err.with_value(value) from None
        return self._read(name, default, run)
