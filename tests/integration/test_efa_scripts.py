"""The EFA programs of a multi-node pod, run for real under bash.

efa_userspace.sh downloads a stand-in for AWS's EFA installer from a local HTTP server: a tarball
with the installer's layout as vLLM's tools/install_efa_userspace.sh reads it
(`aws-efa-installer/DEBS/UBUNTU<release>/<arch>/`, rdma-core/ packages beside libfabric1-aws,
libfabric-aws-bin and libnccl-ofi), made of real .deb files built here with dpkg-deb. efa_check.sh
runs against a stand-in device directory and prefix, and execs the command it was given.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from components.aws_eks.efa import render as efa

SCRIPTS = Path(efa.__file__).resolve().parent
ARCH = "x86_64"
RELEASE = "24.04"
LIB = f"usr/lib/{ARCH}-linux-gnu"

#: package -> files it holds (paths inside the package), as the installer's packages lay them out
PACKAGES = {
    "rdma-core/libibverbs1": {f"{LIB}/libibverbs.so.1": b"ibverbs", f"{LIB}/libibverbs.so.1.14.65.0": b"v"},
    "rdma-core/ibverbs-providers": {f"{LIB}/libefa.so.1": b"efa", f"{LIB}/libibverbs/libefa-rdmav64amzn0.so": b"p"},
    "rdma-core/librdmacm1": {f"{LIB}/librdmacm.so.1": b"rdmacm"},
    "libfabric1-aws": {"opt/amazon/efa/lib/libfabric.so.1": b"fabric"},
    "libfabric-aws-bin": {"opt/amazon/efa/bin/fi_info": b"#!/bin/sh\necho 'provider: efa'\n"},
    "libnccl-ofi": {"opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so": b"plugin"},
}


def _deb(root: Path, name: str, files: dict) -> Path:
    pkg = root / "build" / name.replace("/", "_")
    (pkg / "DEBIAN").mkdir(parents=True)
    (pkg / "DEBIAN" / "control").write_text(
        f"Package: {name.split('/')[-1]}\nVersion: 1.0\nArchitecture: amd64\nMaintainer: test\n"
        "Description: stand-in of an EFA installer package\n")
    for rel, data in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if rel.endswith("fi_info"):
            p.chmod(0o755)
    out = root / "debs" / f"{name}_1.0_amd64.deb"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(pkg), str(out)], check=True,
                   capture_output=True)
    return out


def make_installer(root: Path, packages=PACKAGES, release=RELEASE) -> Path:
    tarball = root / "aws-efa-installer-9.9.9.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        for name, files in packages.items():
            deb = _deb(root, name, files)
            tar.add(deb, f"aws-efa-installer/DEBS/UBUNTU{release.replace('.', '')}/{ARCH}/{name}_1.0_amd64.deb")
    return tarball


class Served:
    def __init__(self, directory: Path):
        handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(directory), **kw)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def installer(tmp_path):
    tarball = make_installer(tmp_path)
    served = Served(tmp_path)
    yield served, tarball
    served.close()


def os_release(tmp_path, id_="ubuntu", version=RELEASE) -> Path:
    p = tmp_path / "os-release"
    p.write_text(f'NAME="Ubuntu"\nID={id_}\nVERSION_ID="{version}"\n')
    return p


def run_userspace(tmp_path, url, dest, **extra):
    env = {"PATH": os.environ["PATH"], "KK3_EFA_INSTALLER_VERSION": "9.9.9", "KK3_EFA_INSTALLER_URL": url,
           "KK3_EFA_DEST": str(dest), "KK3_OS_RELEASE": str(os_release(tmp_path)), "KK3_ARCH": ARCH, **extra}
    return subprocess.run(["bash", str(SCRIPTS / "efa_userspace.sh")], env=env, capture_output=True,
                          text=True, timeout=60)


# ---------------------------------------------------------------- efa_userspace.sh

def test_the_userspace_is_unpacked_where_the_check_and_nccl_look(tmp_path, installer):
    served, tarball = installer
    dest = tmp_path / "opt-amazon"
    sha = hashlib.sha256(tarball.read_bytes()).hexdigest()
    r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", dest, KK3_EFA_INSTALLER_SHA256=sha)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / "efa/lib/libfabric.so.1").read_bytes() == b"fabric"
    assert (dest / "ofi-nccl/lib/libnccl-net-ofi.so").read_bytes() == b"plugin"
    assert (dest / "efa/lib/libibverbs.so.1").exists() and (dest / "efa/lib/librdmacm.so.1").exists()
    assert (dest / "efa/lib/libefa-rdmav64amzn0.so").exists()  # the provider, beside libibverbs
    assert os.access(dest / "efa/bin/fi_info", os.X_OK)
    again = run_userspace(tmp_path, f"{served.url}/{tarball.name}", dest)
    assert again.returncode == 0 and "already in" in again.stdout


def test_a_tarball_that_is_not_the_pinned_one_is_refused(tmp_path, installer):
    served, tarball = installer
    r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", tmp_path / "d", KK3_EFA_INSTALLER_SHA256="0" * 64)
    assert r.returncode == 5 and "sha256" in r.stdout and not (tmp_path / "d").exists()


def test_a_tampered_tarball_is_refused_before_it_is_unpacked(tmp_path, installer):
    """kimi-k3:efaInstallerSha256 pins the tarball the user reviewed; a tarball changed after that
    (at the source or on the way: one bit here) never reaches the volume vLLM loads from."""
    served, tarball = installer
    data = tarball.read_bytes()
    pinned = hashlib.sha256(data).hexdigest()
    tarball.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    dest = tmp_path / "d"
    r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", dest, KK3_EFA_INSTALLER_SHA256=pinned)
    assert r.returncode == 5 and "not KK3_EFA_INSTALLER_SHA256" in r.stdout, r.stdout + r.stderr
    assert not dest.exists()


def test_an_image_that_is_not_ubuntu_is_refused_by_name(tmp_path, installer):
    served, tarball = installer
    (tmp_path / "rhel").mkdir()
    r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", tmp_path / "d",
                      KK3_OS_RELEASE=str(os_release(tmp_path / "rhel", "rhel", "9.4")))
    assert r.returncode == 5 and "rhel 9.4" in r.stdout


def test_a_release_the_installer_has_no_packages_for_is_named(tmp_path, installer):
    served, tarball = installer
    (tmp_path / "old").mkdir()
    r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", tmp_path / "d",
                      KK3_OS_RELEASE=str(os_release(tmp_path / "old", version="20.04")))
    assert r.returncode == 5 and "no packages for Ubuntu 20.04" in r.stdout


def test_a_missing_plugin_package_is_named(tmp_path):
    tarball = make_installer(tmp_path, {k: v for k, v in PACKAGES.items() if k != "libnccl-ofi"})
    served = Served(tmp_path)
    try:
        r = run_userspace(tmp_path, f"{served.url}/{tarball.name}", tmp_path / "d")
    finally:
        served.close()
    assert r.returncode == 5 and "no single libnccl-ofi package" in r.stdout


@pytest.mark.parametrize("key,value", [
    ("KK3_EFA_INSTALLER_VERSION", "1.51.0; touch CANARY"),
    ("KK3_EFA_INSTALLER_VERSION", "latest"),
    ("KK3_EFA_INSTALLER_URL", "https://efa-installer.amazonaws.com/$(touch CANARY).tar.gz"),
    ("KK3_EFA_INSTALLER_URL", "file:///etc/passwd.tar.gz"),
    ("KK3_EFA_INSTALLER_SHA256", "abc"),
    ("KK3_EFA_DEST", "/"),
    ("KK3_EFA_DEST", "/opt/../etc"),
])
def test_bad_settings_are_refused_before_anything_runs(tmp_path, key, value):
    env = {"KK3_EFA_INSTALLER_URL": "https://efa-installer.amazonaws.com/aws-efa-installer-1.51.0.tar.gz",
           key: value.replace("CANARY", str(tmp_path / "canary"))}
    r = run_userspace(tmp_path, env.pop("KK3_EFA_INSTALLER_URL"), tmp_path / "d", **env)
    assert r.returncode == 2 and key in r.stdout and not (tmp_path / "canary").exists()


# ---------------------------------------------------------------- efa_check.sh

def check_env(tmp_path, devices=16, **extra):
    dev = tmp_path / "dev-infiniband"
    dev.mkdir(exist_ok=True)
    for i in range(devices):
        (dev / f"uverbs{i}").touch()
    return {"PATH": os.environ["PATH"], "KK3_EFA_DEVICES": "16", "KK3_EFA_DEV_DIR": str(dev),
            "KK3_EFA_PREFIX": str(tmp_path / "opt-amazon"), "LD_LIBRARY_PATH": "/usr/local/nvidia/lib", **extra}


def prefix_with(tmp_path, libfabric=True, plugin=True, fi_info_ok=True):
    p = tmp_path / "opt-amazon"
    (p / "efa/lib").mkdir(parents=True, exist_ok=True)
    (p / "efa/bin").mkdir(parents=True, exist_ok=True)
    if libfabric:
        (p / "efa/lib/libfabric.so.1").write_bytes(b"x")
    if plugin:
        (p / "ofi-nccl/lib").mkdir(parents=True, exist_ok=True)
        (p / "ofi-nccl/lib/libnccl-net-ofi.so").write_bytes(b"x")
    fi = p / "efa/bin/fi_info"
    fi.write_text("#!/bin/sh\necho 'provider: efa'\n" if fi_info_ok else "#!/bin/sh\necho 'fi_getinfo: -61 (No data available)' >&2\nexit 1\n")
    fi.chmod(0o755)
    return p


def run_check(env, *cmd):
    return subprocess.run(["bash", str(SCRIPTS / "efa_check.sh"), *cmd], env=env, capture_output=True,
                          text=True, timeout=30)


def test_the_check_execs_the_command_with_the_libraries_first(tmp_path):
    p = prefix_with(tmp_path)
    r = run_check(check_env(tmp_path), "sh", "-c", 'echo "LD=$LD_LIBRARY_PATH"; exit 7')
    assert r.returncode == 7, r.stderr  # exec: the command's own exit code
    assert f"LD={p}/efa/lib:{p}/ofi-nccl/lib:/usr/local/nvidia/lib" in r.stdout
    assert "EFA ready: 16 devices" in r.stderr


@pytest.mark.parametrize("setup,expect", [
    (dict(devices=15), "EFA devices absent: "),
    (dict(devices=0), "has 0 uverbs devices, the pod requested 16"),
    (dict(libfabric=False), "libfabric missing: no "),
    (dict(plugin=False), "aws-ofi-nccl missing: no libnccl-net-ofi.so"),
    (dict(fi_info_ok=False), "libfabric's efa provider finds no EFA device: fi_getinfo: -61"),
])
def test_the_check_stops_naming_what_is_missing(tmp_path, setup, expect):
    devices = setup.pop("devices", 16)
    prefix_with(tmp_path, **setup)
    marker = tmp_path / "vllm-ran"
    r = run_check(check_env(tmp_path, devices=devices), "touch", str(marker))
    assert r.returncode == 3 and expect in r.stderr, r.stderr
    assert not marker.exists()  # vLLM never starts on a node that would fall back to TCP


@pytest.mark.parametrize("key,value", [("KK3_EFA_DEVICES", "16; touch CANARY"), ("KK3_EFA_DEVICES", "0"),
                                       ("KK3_EFA_PREFIX", "opt/amazon"), ("KK3_EFA_PREFIX", "/opt/../tmp")])
def test_the_check_refuses_bad_settings(tmp_path, key, value):
    prefix_with(tmp_path)
    env = check_env(tmp_path, **{key: value.replace("CANARY", str(tmp_path / "canary"))})
    r = run_check(env, "true")
    assert r.returncode == 2 and key in r.stderr and not (tmp_path / "canary").exists()
