"""Docker sandbox: the warm runner in a container of its own.

The container has no network (``network_mode="none"``), a read-only root
filesystem, no capabilities, no new privileges, limits on memory and process
count, an unprivileged user, and an environment without secrets. Its only
writable place is a tmpfs scratch root (``/scratch``); there is no /dev/shm.

By default ("runtime mount") the image is empty and the worker's own runtime
is mounted read-only into it at the same paths -- the system directories, the
Python installation, the virtual environment and our ``sandbox`` package --
so the runner is exactly the code and libraries the judge has, and no image
has to be built, pulled or kept in step. Only the ``sandbox`` package is
mounted, not the whole repository: the rest (app code, ``.env``) is none of a
sandbox's business.

Directories the judge names (``read_only_dirs``: its cache of native libraries,
``sandbox.native.cache``) are mounted read-only at the same path: candidates load what the judge built, and cannot
change it. Builds run in the container too (a build job), with the compiler of
the mounted /usr (or, in image mode, the image's).

The judge talks to the runner over a unix socket in a host directory
bind-mounted at ``/ipc``: the Docker API's attach stream is multiplexed and
awkward to use as a byte pipe. Once connected, the driver makes that
directory read-only to the container, so untrusted code cannot write to the
host through it.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass

import docker
import requests
from docker.errors import DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import DeviceRequest, LogConfig, Mount

from . import seccomp
from .base import RunnerSession, SandboxError, sandbox_env
from .process import PACKAGE_ROOT

DEFAULT_IMAGE = "kforge-empty:latest"
SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/bin", "/sbin")
SCRATCH = "/scratch"
IPC = "/ipc"
SOCKET_NAME = "runner.sock"
LABEL = "kforge.sandbox"
DOCKER_ERRORS = (DockerException, requests.RequestException)
# What dockerd says when a GPU is requested and no runtime provides one (docs/gpu.md).
NO_GPU_RUNTIME_HINT = (" -- this Docker host has no GPU runtime: install the NVIDIA Container Toolkit, run "
                       "`nvidia-ctk runtime configure --runtime=docker` and restart dockerd, or judge with "
                       "--sandbox process")


def ensure_empty_image(client: docker.DockerClient, tag: str) -> None:
    """Create ``tag`` as an image with no files at all, unless it exists.

    Made locally by importing an empty tar archive: nothing is ever pulled."""
    try:
        client.images.get(tag)
        return
    except ImageNotFound:
        pass
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:  # "name" or "host:port/name"
        repository, version = tag, "latest"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w"):
        pass
    client.api.import_image_from_data(buf.getvalue(), repository=repository, tag=version)
    client.images.get(tag)


@dataclass
class _Running:
    container: Container | None
    ipc_dir: str


class DockerDriver:
    name = "docker"

    def __init__(
        self,
        image: str | None = None,
        runtime_mount: bool | None = None,
        mem_limit: str = "16g",
        pids_limit: int = 512,
        scratch_mb: int = 4096,
        user: str = "65534:65534",
        base_url: str | None = None,
        start_timeout: float = 180.0,
        image_python: str = "python3",
        image_package_root: str = "/opt/kforge",
        read_only_dirs: list[str] | None = None,
    ) -> None:
        self.image = image or os.environ.get("KFORGE_SANDBOX_IMAGE", DEFAULT_IMAGE)
        # KFORGE_SANDBOX_RUNTIME_MOUNT=0 selects image mode (the Dockerfile's `sandbox` target).
        self.runtime_mount = runtime_mount if runtime_mount is not None else \
            os.environ.get("KFORGE_SANDBOX_RUNTIME_MOUNT", "1").lower() not in ("0", "false", "no")
        self.mem_limit = mem_limit
        self.pids_limit = pids_limit
        self.scratch_mb = scratch_mb
        self.user = user
        self.base_url = base_url
        self.start_timeout = start_timeout
        # Without the runtime mount, the image brings Python, torch, triton
        # and our package itself; these say where.
        self.image_python = image_python
        self.image_package_root = image_package_root
        self.read_only_dirs = list(read_only_dirs or [])
        self._client: docker.DockerClient | None = None
        self._running: dict[int, _Running] = {}

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            try:
                if self.base_url:
                    self._client = docker.DockerClient(base_url=self.base_url, version="auto")
                else:
                    self._client = docker.from_env()
            except DOCKER_ERRORS as exc:
                where = self.base_url or os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
                raise SandboxError(
                    f"dockerd is not reachable at {where} ({exc}); start it with "
                    "`dockerd --bridge=none --iptables=false` (see .ci/start-dockerd.sh)"
                ) from exc
        return self._client

    def start(self, device: str) -> RunnerSession:
        client = self.client
        ipc_dir = _make_ipc_dir(self.user)
        running = _Running(None, ipc_dir)
        try:
            if self.runtime_mount:
                ensure_empty_image(client, self.image)
            # Created, then started: a container that fails to start is still
            # ours to remove.
            running.container = client.containers.create(self.image, **self._options(device, ipc_dir))
            running.container.start()
        except DOCKER_ERRORS as exc:
            _remove(running)
            hint = NO_GPU_RUNTIME_HINT if device == "cuda" and "capabilities: [[gpu]]" in str(exc) else ""
            raise SandboxError(f"could not start the docker sandbox from image {self.image!r}: {exc}{hint}") from exc
        container = running.container
        try:
            sock = self._connect(container, os.path.join(ipc_dir, SOCKET_NAME))
        except (SandboxError, *DOCKER_ERRORS) as exc:
            detail = _logs(container)
            _remove(running)
            raise SandboxError(f"the docker sandbox did not start: {exc}\n{detail}") from exc
        # Connected: the container needs nothing more from the host directory.
        _lock_ipc_dir(ipc_dir)
        try:
            session = RunnerSession(os.dup(sock.fileno()), os.dup(sock.fileno()), f"docker sandbox {container.id[:12]}")
        finally:
            sock.close()
        self._running[id(session)] = running
        try:
            session.wait_ready(timeout=self.start_timeout)
        except SandboxError as exc:
            detail = _logs(container)
            self.stop(session)
            raise SandboxError(f"the docker sandbox did not start: {exc}\n{detail}") from exc
        return session

    def stop(self, session: RunnerSession) -> None:
        session.close()
        running = self._running.pop(id(session), None)
        if running is not None:
            _remove(running)

    def container_id(self, session: RunnerSession) -> str | None:
        running = self._running.get(id(session))
        return running.container.id if running and running.container else None

    def _options(self, device: str, ipc_dir: str) -> dict:
        if self.runtime_mount:
            python, package_root = sys.executable, PACKAGE_ROOT
            mounts = [Mount(target, source, type="bind", read_only=True) for target, source in runtime_mounts()]
        else:
            python, package_root, mounts = self.image_python, self.image_package_root, []
        mounts.append(Mount(IPC, ipc_dir, type="bind", read_only=False))
        # What the judge shares (the native libraries it built for candidates): read-only, same path as on the host.
        mounts += [Mount(d, d, type="bind", read_only=True) for d in self.read_only_dirs]
        command = [python, "-m", "sandbox.runner.process.zygote", "--scratch-root", SCRATCH, "--device", device,
                   "--socket", f"{IPC}/{SOCKET_NAME}", "--kill-leftovers"]
        env = sandbox_env({
            "PYTHONPATH": package_root, "HOME": SCRATCH, "TMPDIR": SCRATCH,
            # The judge's PATH names host directories; this one fits the container.
            "PATH": f"{os.path.dirname(python)}:/usr/local/bin:/usr/bin:/bin" if self.runtime_mount
            else "/usr/local/bin:/usr/bin:/bin",
        })
        options: dict = {
            "command": command, "user": self.user, "environment": env, "working_dir": SCRATCH,
            "network_mode": "none", "read_only": True, "cap_drop": ["ALL"],
            # its own system-call profile: docker's refuses the runner's sampling counters (seccomp.py)
            "security_opt": ["no-new-privileges", seccomp.security_opt()], "mem_limit": self.mem_limit,
            # Swap would let the container exceed its memory limit.
            "memswap_limit": self.mem_limit, "pids_limit": self.pids_limit,
            # No /dev/shm: it would be a second writable place.
            "ipc_mode": "none",
            "tmpfs": {SCRATCH: _tmpfs_options(self.user, self.scratch_mb)},
            "mounts": mounts, "labels": {LABEL: "runner"},
            # The runner's stderr goes to the container log; keep it bounded.
            "log_config": LogConfig(type="json-file", config={"max-size": "1m", "max-file": "1"}),
        }
        if device == "cuda":
            options["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        return options

    def _connect(self, container: Container, path: str) -> socket.socket:
        deadline = time.monotonic() + self.start_timeout
        next_check = 0.0
        while True:
            if os.path.exists(path):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(path)
                    return sock
                except OSError:
                    sock.close()  # bound but not listening yet
            now = time.monotonic()
            if now > deadline:
                raise SandboxError(f"no runner socket after {self.start_timeout:.0f} s")
            if now >= next_check:  # an API call per poll would be slow; the socket check is not
                container.reload()
                if container.status in ("exited", "dead"):
                    raise SandboxError(f"the container exited ({container.attrs['State'].get('ExitCode')})")
                next_check = now + 0.5
            time.sleep(0.01)


def runtime_mounts() -> list[tuple[str, str]]:
    """(target, source) pairs: the worker's runtime at the same paths inside.

    Symlinked system directories (/lib -> usr/lib) are mounted from their
    real directory; a prefix inside one already mounted is not mounted twice."""
    mounts = {d: os.path.realpath(d) for d in SYSTEM_DIRS if os.path.exists(d)}
    wanted = (sys.base_prefix, os.path.realpath(sys.base_prefix), sys.prefix, os.path.join(PACKAGE_ROOT, "sandbox"))
    for target in wanted:
        if not any(target == t or target.startswith(t + "/") for t in mounts):
            mounts[target] = os.path.realpath(target)
    return sorted(mounts.items())


def _make_ipc_dir(user: str) -> str:
    path = tempfile.mkdtemp(prefix="kforge-ipc-")
    uid, gid = _ids(user)
    if os.geteuid() == 0 and uid is not None:
        # Only the container user (and root) may enter while the runner binds.
        os.chown(path, uid, gid if gid is not None else uid)
        os.chmod(path, 0o700)
    else:
        os.chmod(path, 0o777)
    return path


def _lock_ipc_dir(path: str) -> None:
    if os.geteuid() == 0:
        os.chown(path, 0, 0)
    os.chmod(path, 0o500)


def _tmpfs_options(user: str, size_mb: int) -> str:
    uid, gid = _ids(user)
    owner = f"uid={uid},gid={gid if gid is not None else uid},mode=0700" if uid is not None else "mode=1777"
    # Docker mounts a tmpfs noexec unless told: Triton and Inductor load the
    # shared objects they compile into the scratch directory.
    return f"rw,exec,nosuid,nodev,size={size_mb}m,{owner}"


def _ids(user: str) -> tuple[int | None, int | None]:
    name, _, group = user.partition(":")
    uid = int(name) if name.isdigit() else None
    gid = int(group) if group.isdigit() else None
    return uid, gid


def _logs(container: Container) -> str:
    try:
        return container.logs(tail=50).decode("utf-8", "replace")[-2000:]
    except DOCKER_ERRORS:
        return ""


def _remove(running: _Running) -> None:
    if running.container is not None:
        try:
            running.container.remove(force=True)
        except NotFound:
            pass
        except DOCKER_ERRORS as exc:
            raise SandboxError(f"could not remove container {running.container.id[:12]}: {exc}") from exc
    if os.path.isdir(running.ipc_dir):
        os.chmod(running.ipc_dir, 0o700)  # locked read-only after connecting
        shutil.rmtree(running.ipc_dir, ignore_errors=True)
