# KForge images. Targets:
#
#   service     the API and the CPU worker: python:3.11-slim, CPU build of torch
#               docker build --target service -t kforge:latest .
#   gpu-worker  a worker for a gpu-<kind> queue: CUDA base, CUDA build of torch + triton
#               docker build --target gpu-worker -t kforge-gpu-worker:latest .
#   sandbox     the image the docker sandbox driver starts when it does not mount the
#               worker's own runtime: CUDA, torch, triton and our sandbox/ package only
#               docker build --target sandbox -t kforge-sandbox:latest .
#
# Plain Dockerfile syntax only (no heredocs, no RUN --mount, no COPY --chmod), so the
# classic builder of Debian's docker.io builds it as well as BuildKit does. Building
# needs a registry (the base images) and PyPI / download.pytorch.org; see
# docs/runbook.md, "Images". No secret is ever baked in: keys and URLs with passwords
# come from the environment at run time, and .dockerignore keeps .env files out.
#
# torch: pyproject.toml pins torch==2.13.0 without saying which build. The service
# image takes the CPU wheel from TORCH_CPU_INDEX (no multi-GB CUDA libraries on
# API and CPU hosts); the CUDA targets take the CUDA wheel from TORCH_CUDA_INDEX,
# which must match the CUDA major version of CUDA_IMAGE (torch's extension builder
# refuses an nvcc of another major version). The CUDA torch wheel brings its
# triton; on the CPU image triton comes from PyPI (its interpreter runs kernels
# without a GPU).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
# -devel, not -runtime: CUDA C++ candidates are built with nvcc (torch's load_inline),
# and Triton compiles its launcher with the host C compiler at run time.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-devel-ubuntu22.04
ARG TORCH_VERSION=2.13.0
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
ARG TORCH_CUDA_INDEX=https://download.pytorch.org/whl/cu128

# ---------------------------------------------------------------------------------
# requirements: the project's dependency list, read from pyproject.toml, so that
# the dependency layers are rebuilt only when pyproject.toml changes.
FROM ${PYTHON_IMAGE} AS requirements
COPY pyproject.toml /src/pyproject.toml
RUN python -c "import tomllib; deps = tomllib.load(open('/src/pyproject.toml', 'rb'))['project']['dependencies']; open('/requirements.txt', 'w').write('\n'.join(deps) + '\n')"

# ---------------------------------------------------------------------------------
# source: the files the service needs at run time, laid out as in the repository.
# The code finds alembic.ini, migrations/ and problems/ next to its packages
# (app/db/migrate.py, app/jobs/create.py), hence an editable install of
# this tree rather than a wheel.
FROM scratch AS source
COPY pyproject.toml README.md alembic.ini /opt/kforge/
COPY app/ /opt/kforge/app/
COPY agents/ /opt/kforge/agents/
COPY sandbox/ /opt/kforge/sandbox/
COPY knowledge_base/ /opt/kforge/knowledge_base/
COPY taxonomy/ /opt/kforge/taxonomy/
COPY migrations/ /opt/kforge/migrations/
COPY problems/ /opt/kforge/problems/

# ---------------------------------------------------------------------------------
# service: `kforge api`, `kforge worker --queue cpu`, `kforge db upgrade`, `kforge token create`.
FROM ${PYTHON_IMAGE} AS service
ARG TORCH_VERSION
ARG TORCH_CPU_INDEX
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH} \
    KFORGE_DATA_DIR=/var/lib/kforge/data \
    KFORGE_GPU_LOCK_DIR=/var/lib/kforge/locks
RUN groupadd --system --gid 10001 kforge \
 && useradd --system --uid 10001 --gid kforge --home-dir /var/lib/kforge --shell /usr/sbin/nologin kforge \
 && mkdir -p /var/lib/kforge/data /var/lib/kforge/locks \
 && chown -R kforge:kforge /var/lib/kforge
RUN python -m venv /opt/venv \
 && pip install --upgrade pip \
 && pip install --index-url ${TORCH_CPU_INDEX} torch==${TORCH_VERSION}
COPY --from=requirements /requirements.txt /tmp/requirements.txt
RUN pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY --from=source /opt/kforge /opt/kforge
RUN pip install --no-deps -e /opt/kforge \
 && kforge --help > /dev/null \
 && python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
WORKDIR /var/lib/kforge
# The API runs unprivileged. Workers that judge untrusted code run as root in a
# container of their own (compose: user "0:0" + CAP_SYS_ADMIN), because the
# process sandbox isolates its runners only when started by root; see
# docs/runbook.md, "Sandboxes".
USER kforge
EXPOSE 8000
# /healthz for `kforge api` and `kforge serve`; any other role (worker, migrate)
# has no port to probe and counts as healthy while it runs. The API's port, when
# not 8000: KFORGE_HEALTHCHECK_URL. docker-compose.yml probes /readyz instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; args = open('/proc/1/cmdline', 'rb').read().split(b'\\0'); sys.exit(0) if not {b'api', b'serve'} & set(args) else urllib.request.urlopen(os.environ.get('KFORGE_HEALTHCHECK_URL', 'http://127.0.0.1:8000/healthz'), timeout=4)"]
ENTRYPOINT ["kforge"]
CMD ["api", "--host", "0.0.0.0", "--port", "8000"]

# ---------------------------------------------------------------------------------
# cuda-python: Python 3.11 in a venv with the CUDA build of torch (and its triton).
# Shared by gpu-worker and sandbox.
FROM ${CUDA_IMAGE} AS cuda-python
ARG TORCH_VERSION
ARG TORCH_CUDA_INDEX
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH}
# python3.11-dev and a C compiler: Triton builds its launcher against Python.h at
# run time; ninja: torch's load_inline.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        python3.11 python3.11-venv python3.11-dev build-essential ninja-build ca-certificates \
        libopenblas0-openmp libopenblas-dev libdnnl-dev libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
RUN python3.11 -m venv /opt/venv \
 && pip install --upgrade pip \
 && pip install --index-url ${TORCH_CUDA_INDEX} torch==${TORCH_VERSION} \
 && python -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"

# ---------------------------------------------------------------------------------
# gpu-worker: `kforge worker --queue gpu-<kind>` on a GPU host.
FROM cuda-python AS gpu-worker
ENV KFORGE_DATA_DIR=/var/lib/kforge/data \
    KFORGE_GPU_LOCK_DIR=/var/lib/kforge/locks
RUN groupadd --system --gid 10001 kforge \
 && useradd --system --uid 10001 --gid kforge --home-dir /var/lib/kforge --shell /usr/sbin/nologin kforge \
 && mkdir -p /var/lib/kforge/data /var/lib/kforge/locks \
 && chown -R kforge:kforge /var/lib/kforge
COPY --from=requirements /requirements.txt /tmp/requirements.txt
# torch==2.13.0 is already satisfied by the CUDA build installed above.
RUN pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY --from=source /opt/kforge /opt/kforge
RUN pip install --no-deps -e /opt/kforge && kforge --help > /dev/null
WORKDIR /var/lib/kforge
# Root on purpose: this image only runs workers, and the process sandbox isolates
# its runners (network and mount namespaces, a uid per candidate) only when started
# by root. Run it with CAP_SYS_ADMIN (docker-compose.yml does); see docs/runbook.md.
USER root
# The nvidia/cuda entrypoint script is replaced.
ENTRYPOINT ["kforge"]
CMD ["worker", "--queue", "gpu-h100"]

# ---------------------------------------------------------------------------------
# sandbox: what a docker sandbox container runs when the driver does not mount
# the worker's runtime (DockerDriver(runtime_mount=False), with its defaults
# image_python="python3", image_package_root="/opt/kforge"). The driver starts
# `python3 -m sandbox.runner.process.zygote ...` with PATH=/usr/local/bin:/usr/bin:/bin
# and PYTHONPATH=/opt/kforge, as uid 65534, on a read-only root with a tmpfs at
# /scratch. Code that runs in a sandbox imports only the standard library, torch
# and triton, so the image holds those and sandbox/ alone: no app code, no keys.
FROM cuda-python AS sandbox
# numpy and einops: what the worker's own environment offers references and candidates too.
RUN pip install "numpy>=1.26" "einops>=0.8" \
 && printf '#!/bin/sh\nexec /opt/venv/bin/python "$@"\n' > /usr/local/bin/python3 \
 && chmod 0755 /usr/local/bin/python3 \
 && ln -s python3 /usr/local/bin/python
COPY sandbox/ /opt/kforge/sandbox/
ENV PYTHONPATH=/opt/kforge \
    HOME=/scratch \
    TMPDIR=/scratch
USER 65534:65534
WORKDIR /scratch
# The driver gives the full command line; no entrypoint may prefix it.
ENTRYPOINT []
CMD ["python3", "-c", "import torch, triton, sandbox.runner.process.zygote; print('kforge sandbox: torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"]
