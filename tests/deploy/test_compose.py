"""docker-compose.yml: its structure, and `docker compose config` when a compose
CLI is installed (v2 plugin or the v1 `docker-compose`); the structural checks
run everywhere."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
import yaml

from .helpers import COMPOSE, SECRET_MARKERS, VAR_REF, compose_cli, dockerfile, parse_kforge, run_config

CONFIG = yaml.safe_load(COMPOSE.read_text())
SERVICES: dict[str, dict] = CONFIG["services"]
OURS = ("migrate", "api", "worker", "gpu-worker")  # services that run a kforge image
WORKERS = ("worker", "gpu-worker")


def env_of(service: str) -> dict[str, str | None]:
    env = SERVICES[service].get("environment") or {}
    if isinstance(env, list):  # ["NAME=value", "NAME"]
        return {k: (v if sep else None) for k, sep, v in (e.partition("=") for e in env)}
    return {k: (None if v is None else str(v)) for k, v in env.items()}


def healthcheck_text(service: str) -> str:
    test = SERVICES[service].get("healthcheck", {}).get("test")
    assert test, f"{service} has no healthcheck"
    return " ".join(test) if isinstance(test, list) else test


def depends(service: str) -> dict[str, str]:
    deps = SERVICES[service].get("depends_on") or {}
    if isinstance(deps, list):
        return {name: "service_started" for name in deps}
    return {name: (spec or {}).get("condition", "service_started") for name, spec in deps.items()}


def test_all_services_are_declared():
    assert {"postgres", "redis", "migrate", "api", "worker", "gpu-worker"} <= set(SERVICES)
    assert SERVICES["postgres"]["image"].startswith("postgres:16")
    assert SERVICES["redis"]["image"].startswith("redis:7")


def test_healthchecks():
    assert "pg_isready" in healthcheck_text("postgres")
    assert "redis-cli" in healthcheck_text("redis") and "ping" in healthcheck_text("redis")
    api = healthcheck_text("api")
    port = parse_kforge(SERVICES["api"]["command"])[1]["port"]
    assert f"127.0.0.1:{port}/readyz" in api, "the API's healthcheck probes /readyz on the port the API listens on"
    code = SERVICES["api"]["healthcheck"]["test"]
    if isinstance(code, list) and "-c" in code:  # a python one-liner: it must at least compile
        compile(code[code.index("-c") + 1], "healthcheck", "exec")


def test_migrations_run_once_and_gate_everything_else():
    migrate = SERVICES["migrate"]
    assert parse_kforge(migrate["command"])[0] == ("db", "upgrade")
    assert str(migrate.get("restart", "no")) == "no", "a one-shot service must not restart"
    assert depends("migrate") == {"postgres": "service_healthy"}
    for name in ("api", *WORKERS):
        deps = depends(name)
        assert deps.get("migrate") == "service_completed_successfully", f"{name} starts before the schema is at head"
        assert deps.get("redis") == "service_healthy", f"{name} starts before the broker answers"


def test_every_command_is_a_kforge_command_line():
    for name in OURS:
        command = SERVICES[name]["command"]
        assert isinstance(command, list), f"{name}: use the exec (list) form for command"
        parse_kforge(command)  # raises on an unknown command or option


def test_the_api_listens_on_all_interfaces_of_its_container():
    params = parse_kforge(SERVICES["api"]["command"])[1]
    assert params["host"] == "0.0.0.0"
    assert str(params["port"]) in [str(p) for p in SERVICES["api"]["expose"]]


def test_api_containers_scale_behind_the_load_balancer():
    """The api publishes no host port (so `--scale api=N` cannot collide); the
    lb service does, and proxies to the name every api container answers to,
    re-resolved so new replicas join without a restart."""
    assert "ports" not in SERVICES["api"], "a published port on api makes `--scale api=N` fail"
    lb = SERVICES["lb"]
    assert lb["image"].startswith("nginx:")
    assert depends("lb") == {"api": "service_healthy"}
    listen = int(re.search(r"listen\s+(\d+);", (COMPOSE.parent / "deploy" / "nginx.conf").read_text()).group(1))
    assert any(str(p).endswith(f":{listen}") and "127.0.0.1" in str(p) for p in lb["ports"])
    conf_path = next(v.split(":")[0] for v in lb["volumes"] if v.endswith("default.conf:ro"))
    conf = (COMPOSE.parent / conf_path).read_text()
    port = parse_kforge(SERVICES["api"]["command"])[1]["port"]
    assert re.search(rf"set \$api http://api:{port};", conf) and "proxy_pass $api;" in conf
    assert "resolver 127.0.0.11" in conf, "without Docker's resolver per request, new api replicas are never used"


def test_workers_and_queues():
    path, params = parse_kforge(SERVICES["worker"]["command"])
    assert path == ("worker",) and params["queue"] == ["cpu"]
    path, params = parse_kforge(SERVICES["gpu-worker"]["command"])
    assert path == ("worker",) and all(q.startswith("gpu-") for q in params["queue"])


def test_gpu_worker_requests_an_nvidia_gpu_under_a_profile():
    gpu = SERVICES["gpu-worker"]
    assert "gpu" in gpu.get("profiles", []), "CPU-only hosts must be able to `up` without the GPU worker"
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d.get("capabilities", []) and (d.get("count") or d.get("device_ids"))
               for d in devices)
    env = env_of("gpu-worker")
    assert env.get("CUDA_VISIBLE_DEVICES") not in (None, "")
    # Workers on one GPU share its timing lock: the lock directory must be a shared volume.
    lock_dir = env.get("KFORGE_GPU_LOCK_DIR")
    assert lock_dir and any(str(v).split(":")[1] == lock_dir for v in gpu.get("volumes", []))
    for name in ("postgres", "redis", "migrate", "api", "worker"):
        assert not SERVICES[name].get("profiles"), f"{name} must start without naming a profile"
        assert "deploy" not in SERVICES[name] or "devices" not in str(SERVICES[name]["deploy"])


def test_workers_can_isolate_the_process_sandbox():
    """The process driver isolates its runner (namespaces, a uid per candidate)
    only when started by root, and needs CAP_SYS_ADMIN for that in a container."""
    for name in WORKERS:
        svc = SERVICES[name]
        assert str(svc.get("user")) in ("0", "0:0", "root"), f"{name} must run as root for the process sandbox"
        assert "SYS_ADMIN" in svc.get("cap_add", []), f"{name} cannot enter namespaces without CAP_SYS_ADMIN"
        assert not svc.get("privileged"), f"{name}: CAP_SYS_ADMIN is enough; do not run privileged"
        sandbox = env_of(name).get("KFORGE_SANDBOX")
        assert sandbox in (None, "process"), "the docker sandbox does not work from inside a container (runbook)"
    for name in ("api", "migrate"):
        assert "SYS_ADMIN" not in SERVICES[name].get("cap_add", []) and not SERVICES[name].get("user")


def test_database_and_broker_urls_point_at_the_compose_services():
    pg_env = env_of("postgres")
    password_var = re.match(r"^\$\{(\w+)", pg_env["POSTGRES_PASSWORD"]).group(1)
    for name in OURS:
        env = env_of(name)
        raw = env["KFORGE_DATABASE_URL"]
        ref = re.search(r"//[^:/@]+:(\$\{[^}]*\})@", raw)
        assert ref and VAR_REF.match(ref.group(1)), "the database password is a ${VAR} reference, never a literal"
        assert ref.group(1).startswith("${" + password_var), "the same variable as postgres' POSTGRES_PASSWORD"
        db = urlsplit(re.sub(r"\$\{[^}]*\}", "x", raw))
        assert db.scheme in ("postgresql", "postgresql+psycopg")
        assert db.hostname == "postgres" and db.path == f"/{pg_env['POSTGRES_DB']}"
        assert db.username == pg_env["POSTGRES_USER"]
        broker = urlsplit(env["KFORGE_BROKER_URL"])
        assert broker.scheme == "redis" and broker.hostname == "redis"


def test_no_secret_is_written_in_the_file():
    for name in SERVICES:
        for key, value in env_of(name).items():
            if any(m in key.upper() for m in SECRET_MARKERS):
                assert value is None or VAR_REF.match(value), f"{name}: {key} must come from the environment, not the file"
            if value and "://" in value:
                netloc = urlsplit(re.sub(r"\$\{[^}]*\}", "${REF}", value)).netloc
                if "@" in netloc and ":" in netloc.split("@")[0]:
                    secret = netloc.split("@")[0].split(":", 1)[1]
                    assert secret.startswith("${"), f"{name}: {key} holds a literal password"
    text = COMPOSE.read_text()
    for marker in ("sk-", "sk_live", "kf_", "AKIA"):
        assert marker not in text, f"something like a key ({marker}...) is written in docker-compose.yml"


def test_provider_keys_reach_the_workers():
    for name in WORKERS:
        env = env_of(name)
        assert "OPENAI_API_KEY" in env and "ANTHROPIC_API_KEY" in env


def test_build_targets_exist_in_the_dockerfile():
    _, stages = dockerfile()
    for name in OURS:
        build = SERVICES[name]["build"]
        assert build["context"] == "." and build["target"] in stages
    assert SERVICES["gpu-worker"]["build"]["target"] == "gpu-worker"
    assert {SERVICES[n]["build"]["target"] for n in ("migrate", "api", "worker")} == {"service"}


# --------------------------------------------------------------------- compose CLI

@pytest.fixture(scope="module")
def cli() -> list[str]:
    found = compose_cli()
    if found is None:
        pytest.skip("no compose CLI (docker compose / docker-compose) installed; the structural checks above still ran")
    return found


def test_compose_cli_accepts_the_file(cli, tmp_path):
    env_file = tmp_path / "compose.env"
    env_file.write_text("POSTGRES_PASSWORD=not-a-real-password\n")
    proc = run_config(cli, env_file)
    assert proc.returncode == 0, proc.stderr
    resolved = yaml.safe_load(proc.stdout)["services"]
    assert {"postgres", "redis", "migrate", "api", "worker", "gpu-worker"} <= set(resolved)
    url = resolved["api"]["environment"]["KFORGE_DATABASE_URL"]
    assert url == "postgresql+psycopg://kforge:not-a-real-password@postgres:5432/kforge"
    devices = resolved["gpu-worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia"
    assert resolved["api"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_compose_cli_refuses_to_run_without_a_database_password(cli, tmp_path):
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    proc = run_config(cli, env_file, "-q")
    assert proc.returncode != 0 and "POSTGRES_PASSWORD" in proc.stderr
