"""The router's wheels pinned by sha256 (components/router/wheels.py, wheels.json): each table
covers exactly its pinned closure, every pin has a wheel each Python the closure serves can
install on both machines (packaging's tags, pip's own library), and the install options make real
pip refuse a wheel whose bytes are not the pinned ones (a tiny wheel built here; no network)."""

import base64
import hashlib
import re
import subprocess
import sys
import zipfile
from importlib.metadata import metadata

import pytest

from components.router import host
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import parse_wheel_filename

from components.router import wheels
from components.router.settings import ROUTER_CLOSURES, ROUTER_REQUIREMENTS
from components.router.wheels import (CLOSURES, PIP_HASH_OPTIONS, closure_for, hashes, keep_wheel,
                                      requirements_txt, requires_python)

#: the Pythons each closure is for: "current" from 3.11 (the aws-eks pod's python:3.11 and the
#: tests' own), "legacy" 3.8-3.10 (a CTyun master's OS python3)
SERVED = {"current": [(3, 11), (3, 12), (3, 13)], "legacy": [(3, 8), (3, 9), (3, 10)]}
MACHINES = ("x86_64", "aarch64")


def _platforms(machine):
    """What pip accepts on a glibc 2.28 Linux (openEuler 22.03 has 2.34, vllm-router's own
    wheel needs 2.28): manylinux_2_28 down to 2_5 and the PEP 513/571/599 aliases, newest first."""
    out = [f"manylinux_2_{m}_{machine}" for m in range(28, 4, -1)]
    out += [f"manylinux2014_{machine}"]
    if machine == "x86_64":
        out += ["manylinux2010_x86_64", "manylinux1_x86_64"]
    return out


def _tags(version, machine):
    """The tags a CPython `version` on `machine` installs (packaging.tags, as pip builds them)."""
    platforms = _platforms(machine)
    interpreter = f"cp{version[0]}{version[1]}"
    return set(cpython_tags(version, [interpreter, "abi3", "none"], platforms)) | \
        set(compatible_tags(version, interpreter, platforms))


def test_the_tag_sets_accept_what_pip_accepts_and_nothing_else():
    t = _tags((3, 9), "aarch64")
    assert Tag("cp39", "cp39", "manylinux_2_17_aarch64") in t
    assert Tag("cp38", "abi3", "manylinux_2_28_aarch64") in t    # vllm-router's own wheel
    assert Tag("py3", "none", "any") in t
    assert Tag("cp310", "cp310", "manylinux_2_17_aarch64") not in t
    assert Tag("cp39", "cp39", "manylinux_2_17_x86_64") not in t
    assert Tag("cp39", "cp39", "manylinux_2_31_aarch64") not in t


@pytest.mark.parametrize("closure", CLOSURES)
@pytest.mark.parametrize("machine", MACHINES)
def test_every_pin_has_a_wheel_each_python_it_serves_installs(closure, machine):
    floors = wheels._section(closure)["file_requires_python"]
    for version in SERVED[closure]:
        assert closure_for(version) == closure
        tags, full = _tags(version, machine), "%d.%d.0" % version
        for req, files in hashes(closure).items():
            ok = [f for f in files
                  if parse_wheel_filename(f)[3] & tags and full in SpecifierSet(floors.get(f, ""))]
            assert ok, f"{req}: no wheel for CPython {full} on {machine} ({closure})"


def test_a_missing_wheel_or_a_higher_floor_is_caught():
    # the check above fails for the current closure's files on 3.9, and for a file whose
    # recorded Requires-Python excludes the version
    tags = _tags((3, 9), "aarch64")
    floors = wheels._section("current")["file_requires_python"]
    fastapi = next(r for r in hashes("current") if r.startswith("fastapi=="))
    (f,) = hashes("current")[fastapi]
    assert parse_wheel_filename(f)[3] & tags and "3.9.0" not in SpecifierSet(floors[f])
    aiohttp = next(r for r in hashes("current") if r.startswith("aiohttp=="))
    assert not [f for f in hashes("current")[aiohttp]
                if parse_wheel_filename(f)[3] & tags and "py3-none-any" not in f]


@pytest.mark.parametrize("version,closure", [
    ((3, 6), None), ((3, 7), None), ((3, 8), "legacy"), ((3, 10), "legacy"),
    ((3, 11), "current"), ((3, 14), "current"), ((4, 0), "current"),
])
def test_closure_for_a_python(version, closure):
    assert closure_for(version) == closure


def test_each_closures_floor_is_what_its_files_declare():
    # current: some file refuses 3.10 (fastapi, starlette, multidict, annotated-doc declare
    # >=3.11), so its floor cannot be lower; legacy: vllm-router itself declares >=3.8
    current = wheels._section("current")["file_requires_python"].values()
    assert requires_python("current") == (3, 11)
    assert any("3.10.0" not in SpecifierSet(f) for f in current)
    legacy = wheels._section("legacy")["file_requires_python"]
    router = [f for f in legacy if f.startswith("vllm_router-")]
    assert requires_python("legacy") == (3, 8) and router
    assert all("3.7.0" not in SpecifierSet(legacy[f]) for f in router)
    with pytest.raises(KeyError, match="no router closure 'py27'"):
        hashes("py27")


@pytest.mark.parametrize("closure", CLOSURES)
def test_every_pinned_requirement_has_wheel_digests_and_nothing_else_has(closure):
    table = hashes(closure)
    assert set(table) == set(ROUTER_CLOSURES[closure])
    for req, files in table.items():
        name, version = req.split("==")
        stem = re.sub(r"[-_.]+", "_", name).lower()
        assert files, req
        for filename, digest in files.items():
            assert filename.lower().startswith(f"{stem}-{version}-") and keep_wheel(filename), filename
            assert re.fullmatch(r"[0-9a-f]{64}", digest), (filename, digest)
    # the two platforms the router runs on have the router's own compiled wheel
    router = table[next(r for r in ROUTER_CLOSURES[closure] if r.startswith("vllm-router=="))]
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
    script = host.install_sh("/opt/r")
    for closure in CLOSURES:
        major, minor = requires_python(closure)
        assert (f'[ "$major" -eq {major} ] && [ "$minor" -ge {minor} ]; }}; then\n'
                f"  req={host.REQUIREMENTS_FILES[closure]}\n") in script


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
