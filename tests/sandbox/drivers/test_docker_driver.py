"""The docker sandbox driver, against the real dockerd (.ci/start-dockerd.sh).

Skipped when no dockerd answers, unless KFORGE_REQUIRE_DOCKER=1 (CI), where
that is a failure. Probe jobs report what they saw by raising: the message of
the load error frame is the only channel a job has besides its results.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import docker
import pytest

from sandbox.drivers import get_driver
from sandbox.drivers.base import RunnerSession, SandboxError
from sandbox.drivers.docker import DockerDriver, ensure_empty_image
from sandbox.drivers.process import PACKAGE_ROOT, ProcessDriver

REFERENCE = """\
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
N = 64
def get_inputs():
    return [torch.randn(4, N)]
def get_init_inputs():
    return []
"""


def _client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:  # no daemon on this machine
        if os.environ.get("KFORGE_REQUIRE_DOCKER") == "1":
            raise
        pytest.skip(f"dockerd is not reachable: {exc}")


def job(source: str, filename: str = "ref.py") -> dict[str, Any]:
    return {"role": "reference", "source": source, "filename": filename, "device": "cpu", "constants": ["N"],
            "trials": [{"seed": 1, "input_seed": 2, "tag": "default"}], "time_reps": 0}


def probe(session: RunnerSession, body: str) -> str:
    """Run ``body`` at import in the sandbox; it sets RESULT, which comes back as text."""
    source = "import os, sys\n" + body + "\nraise RuntimeError(repr(RESULT))\n"
    outcome = session.run(job(source, "probe.py"), timeout=60, memory_mb=2048, max_procs=64)
    error = outcome.first("error")
    assert error is not None, outcome
    assert "RuntimeError: " in error["message"], error
    return error["message"].split("RuntimeError: ", 1)[1]


@pytest.fixture(scope="module")
def client() -> docker.DockerClient:
    return _client()


@pytest.fixture(scope="module")
def started(client: docker.DockerClient) -> Iterator[tuple[DockerDriver, RunnerSession]]:
    # A secret in the judge's environment must not reach the sandbox.
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-test-must-not-leak"
    try:
        driver = DockerDriver()
        session = driver.start("cpu")
    finally:
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved
    yield driver, session
    driver.stop(session)


def test_ready_frame(started: tuple[DockerDriver, RunnerSession]) -> None:
    import torch

    _, session = started
    assert session.ready["kind"] == "ready"
    assert session.ready["device"] == "cpu"
    assert session.ready["torch"] == str(torch.__version__)  # the worker's own runtime, mounted
    assert "channel: unix socket" in session.ready["notes"]
    assert session.ready["allocator"] == "jemalloc"  # preloaded from the host's /usr, mounted


def test_reference_job(started: tuple[DockerDriver, RunnerSession]) -> None:
    _, session = started
    outcome = session.run(job(REFERENCE), timeout=60, memory_mb=2048, max_procs=64)
    assert outcome.exit["reason"] is None, outcome.exit
    assert [f["kind"] for f in outcome.frames] == ["loaded", "trial", "done"]
    trial = outcome.first("trial")
    assert trial is not None and "error" not in trial
    assert tuple(trial["outputs"][0].shape) == (4, 64)
    assert all(f["_t"] > 0 for f in outcome.frames)  # stamped by the runner


def test_torch_compile_warms_inside_the_container(started: tuple[DockerDriver, RunnerSession]) -> None:
    """The warm-up writes only under the scratch root (the container's root is read-only)
    and leaves the runner with no new thread or process (runner/process/prewarm.py)."""
    _, session = started
    warmed = session.warm()
    assert "error" not in warmed, warmed
    assert warmed["threads"] == warmed["threads_before"] and warmed["children"] == 0, warmed
    outcome = session.run(job(REFERENCE), timeout=60, memory_mb=2048, max_procs=64)
    assert outcome.exit["reason"] is None, outcome.exit  # jobs fork from the warmed runner as before


def test_no_network(started: tuple[DockerDriver, RunnerSession]) -> None:
    _, session = started
    source = "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)\n" + REFERENCE
    outcome = session.run(job(source), timeout=60, memory_mb=2048, max_procs=64)
    error = outcome.first("error")
    assert error is not None and error["phase"] == "load", outcome.frames
    assert "OSError" in error["message"] or "unreachable" in error["message"], error
    assert outcome.first("loaded") is None


def test_filesystem_is_read_only_but_scratch(started: tuple[DockerDriver, RunnerSession]) -> None:
    import sys

    _, session = started
    targets = ["/", "/etc", "/usr", "/ipc", "/dev", "/dev/shm", "/root", sys.prefix, sys.base_prefix,
               os.path.join(PACKAGE_ROOT, "sandbox")]
    body = f"""
written = []
for d in {targets!r} + [os.getcwd(), os.environ["HOME"]]:
    try:
        with open(os.path.join(d, "kforge-probe"), "w") as f:
            f.write("x")
        written.append(d)
    except OSError:
        pass
RESULT = (written, os.getcwd(), os.environ["HOME"], os.getuid(), os.path.exists({PACKAGE_ROOT + "/app"!r}),
          sorted(os.listdir("/etc")))
"""
    written, cwd, home, uid, app_visible, etc = eval(probe(session, body))
    # only the job's own home is writable; its working directory is empty and read-only
    assert cwd.startswith("/scratch/") and home.startswith("/scratch/"), (cwd, home)
    assert written == [home], written
    assert uid == 65534
    assert not app_visible  # only the sandbox package of the repository is mounted
    assert "passwd" not in etc and "shadow" not in etc


def test_container_settings_and_env(started: tuple[DockerDriver, RunnerSession], client: docker.DockerClient) -> None:
    driver, session = started
    container_id = driver.container_id(session)
    assert container_id
    attrs = client.containers.get(container_id).attrs
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] and host["Memory"]
    assert attrs["Config"]["User"] == "65534:65534"
    names = [e.split("=", 1)[0] for e in attrs["Config"]["Env"]]
    assert not [n for n in names if "KEY" in n.upper()], names
    # And what a job's process sees.
    seen = eval(probe(session, "RESULT = sorted(os.environ.items())"))
    assert not [k for k, _ in seen if "KEY" in k.upper()], seen
    assert not [v for _, v in seen if "sk-test" in v]


def test_the_profile_lets_a_job_sample_itself_and_refuses_new_namespaces(
        started: tuple[DockerDriver, RunnerSession]) -> None:
    # docker's default profile refuses perf_event_open; the judge's (drivers/seccomp.py) allows
    # it, and refuses what it lists: unshare, and clone with a namespace flag
    _, session = started
    seen = eval(probe(session, "import ctypes\nfrom sandbox.runner.measure import sampling\n"
                               "fds, why = sampling.open_counters()\n[os.close(f) for f in fds]\n"
                               "libc = ctypes.CDLL(None, use_errno=True)\nrc = libc.unshare(0x10000000)\n"
                               "RESULT = (len(fds), why, rc, ctypes.get_errno())"))
    counters, why, rc, errno = seen
    assert why is None and counters >= 2, seen  # the maps file and a counter a CPU
    assert rc == -1 and errno == 1, seen  # EPERM


def test_leftover_processes_are_killed(started: tuple[DockerDriver, RunnerSession]) -> None:
    _, session = started
    # A grandchild in a session of its own escapes the process-group kill;
    # it closes its descriptors so that the job itself ends normally.
    escape = """
import time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 1024)
        time.sleep(600)
    os._exit(0)
time.sleep(0.2)
RESULT = 0
"""
    probe(session, escape)
    body = """
others = []
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) not in (1, os.getpid()):
        try:
            others.append((name, open(f"/proc/{name}/stat").read()[:60]))
        except OSError:
            pass
RESULT = others
"""
    assert eval(probe(session, body)) == []


def test_stop_removes_container(client: docker.DockerClient) -> None:
    driver = DockerDriver()
    session = driver.start("cpu")
    container_id = driver.container_id(session)
    ipc_dir = driver._running[id(session)].ipc_dir
    assert container_id and os.path.isdir(ipc_dir)
    driver.stop(session)
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(container_id)
    assert not os.path.exists(ipc_dir)
    assert not session.alive


def test_ensure_empty_image(client: docker.DockerClient) -> None:
    tag = f"kforge-empty-test-{uuid.uuid4().hex[:8]}:latest"
    try:
        ensure_empty_image(client, tag)
        ensure_empty_image(client, tag)  # idempotent
        assert client.images.get(tag).attrs["Size"] == 0
    finally:
        client.images.remove(tag, force=True)


def test_unreachable_daemon_is_a_sandbox_error() -> None:
    driver = DockerDriver(base_url="unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match="dockerd is not reachable"):
        driver.start("cpu")


def test_get_driver() -> None:
    assert isinstance(get_driver("process"), ProcessDriver)
    docker_driver = get_driver("docker", image="some-image:tag")
    assert isinstance(docker_driver, DockerDriver) and docker_driver.image == "some-image:tag"
    with pytest.raises(ValueError, match="unknown sandbox driver"):
        get_driver("vm")


def _ours(client: docker.DockerClient) -> list[str]:
    return [c.id for c in client.containers.list(all=True, filters={"label": "kforge.sandbox"})]


def test_failed_start_leaves_nothing(client: docker.DockerClient) -> None:
    before = set(_ours(client))
    # The image has no Python of its own: the container cannot even start.
    with pytest.raises(SandboxError, match="could not start the docker sandbox"):
        DockerDriver(runtime_mount=False).start("cpu")
    # The runner starts and exits at once (argparse rejects the device).
    with pytest.raises(SandboxError, match="container exited") as info:
        DockerDriver().start("tpu")
    assert "invalid choice" in str(info.value)  # the runner's stderr, from the container log
    assert set(_ours(client)) <= before


def test_a_gpu_container_asks_for_the_gpus_and_keeps_every_other_limit() -> None:
    """What a cuda runner's container is created with (``--gpus all`` through the NVIDIA
    runtime), read without a GPU: the device request, and the CPU container's guarantees."""
    options = DockerDriver()._options("cuda", "/tmp/ipc")
    [request] = options["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
    assert options["network_mode"] == "none" and options["read_only"] is True and options["cap_drop"] == ["ALL"]
    assert options["ipc_mode"] == "none" and "no-new-privileges" in options["security_opt"]
    assert "--device" in options["command"] and options["command"][options["command"].index("--device") + 1] == "cuda"


def test_a_gpu_request_on_a_host_without_the_gpu_runtime_says_what_to_install(client: docker.DockerClient) -> None:
    if any("nvidia" in name for name in (client.info().get("Runtimes") or {})):
        pytest.skip("this dockerd has the NVIDIA runtime: the GPU container would start")
    before = set(_ours(client))
    with pytest.raises(SandboxError, match="NVIDIA Container Toolkit"):
        DockerDriver().start("cuda")
    assert set(_ours(client)) <= before
