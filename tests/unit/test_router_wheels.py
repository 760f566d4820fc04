"""The router's wheels pinned by sha256 (components/router/wheels.py, wheels.json): the table
covers exactly the pinned closure, and the install options make real pip refuse a wheel whose
bytes are not the pinned ones (a tiny wheel built here; no network)."""

import base64
import hashlib
import re
import subprocess
import sys
import zipfile
from importlib.metadata import metadata

import pytest

from components.router import host
from components.router.settings import ROUTER_REQUIREMENTS
from components.router.wheels import (PIP_HASH_OPTIONS, hashes, keep_wheel, requirements_txt,
                                      requires_python)


def test_every_pinned_requirement_has_wheel_digests_and_nothing_else_has():
    table = hashes()
    assert set(table) == set(ROUTER_REQUIREMENTS)
    for req, files in table.items():
        name, version = req.split("==")
        stem = re.sub(r"[-_.]+", "_", name).lower()
        assert files, req
        for filename, digest in files.items():
            assert filename.lower().startswith(f"{stem}-{version}-") and keep_wheel(filename), filename
            assert re.fullmatch(r"[0-9a-f]{64}", digest), (filename, digest)
    # the two platforms the router runs on have the router's own compiled wheel
    router = table[next(r for r in ROUTER_REQUIREMENTS if r.startswith("vllm-router=="))]
    assert any("x86_64" in f for f in router) and any("aarch64" in f for f in router)


@pytest.mark.parametrize("filename,kept", [
    ("vllm_router-0.1.17-cp38-abi3-manylinux_2_28_x86_64.whl", True),
    ("yarl-1.25.1-py3-none-any.whl", True),
    ("orjson-3.13.0-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl", True),
    ("orjson-3.13.0-cp312-cp312-musllinux_1_2_x86_64.whl", False),
    ("orjson-3.13.0-cp312-cp312-win_amd64.whl", False),
    ("orjson-3.13.0-cp312-cp312-macosx_11_0_arm64.whl", False),
    ("multidict-7.2.1-cp313-cp313t-manylinux_2_17_x86_64.whl", False),  # free-threaded
    ("pydantic_core-2.50.5-pp311-pypy311_pp73-manylinux_2_17_x86_64.whl", False),
    ("pydantic_core-2.50.5-graalpy312-graalpy250_312_native-manylinux2014_aarch64.whl", False),
    ("yarl-1.25.1.tar.gz", False),  # an sdist: built on the master, never
])
def test_kept_wheels(filename, kept):
    assert keep_wheel(filename) is kept


def test_requires_python_is_the_highest_floor_of_the_installed_closure():
    # the closure installed here is the pinned one (test_router_settings checks it)
    floors = []
    for req in ROUTER_REQUIREMENTS:
        spec = metadata(req.split("==")[0]).get("Requires-Python") or ""
        m = re.search(r">=\s*(\d+)\.(\d+)", spec)
        if m:
            floors.append((int(m[1]), int(m[2])))
    assert requires_python() == max(floors)
    assert f"sys.version_info < {requires_python()}" in host.install_sh("/opt/r")


def test_a_requirement_without_digests_is_refused():
    with pytest.raises(KeyError, match="no wheel digests for left-pad==1.0"):
        requirements_txt(["left-pad==1.0"], table={})


def _wheel(directory, name="kk3probe", version="1.0", payload="x = 1\n"):
    """A minimal valid wheel (PEP 427: the .dist-info with METADATA, WHEEL and RECORD)."""
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": payload,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: kimi-k3-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for arc, text in files.items():
        d = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={d},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in files.items():
            z.writestr(arc, text)
    return path


def _pip_install(tmp_path, table):
    req = tmp_path / "requirements.txt"
    req.write_text(requirements_txt(["kk3probe==1.0"], table=table))
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--isolated", "--no-index", "--find-links",
         str(tmp_path / "wheels"), "--no-cache-dir", "--no-deps", "--disable-pip-version-check",
         *PIP_HASH_OPTIONS, "--target", str(tmp_path / "site"), "-r", str(req)],
        capture_output=True, text=True, timeout=120)


def test_pip_installs_the_pinned_bytes_and_refuses_others(tmp_path):
    (tmp_path / "wheels").mkdir()
    wheel = _wheel(tmp_path / "wheels")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    ok = _pip_install(tmp_path, {"kk3probe==1.0": {wheel.name: digest}})
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "site" / "kk3probe.py").read_text() == "x = 1\n"
    # the index now serves other bytes under the same name and version: refused, nothing installed
    wheel.unlink()
    _wheel(tmp_path / "wheels", payload="import os; os.system('id')\n")
    (tmp_path / "site").rename(tmp_path / "site.old")
    bad = _pip_install(tmp_path, {"kk3probe==1.0": {wheel.name: digest}})
    assert bad.returncode != 0 and "DO NOT MATCH THE HASHES" in bad.stderr
    assert not (tmp_path / "site" / "kk3probe.py").exists()
