#!/usr/bin/env bash
# Gathers the wheels that a GPU machine without a package registry lacks to run KForge from
# a checkout (list and reasons: scripts/gpu_wheels.txt), and writes DIR/install.sh, which
# installs them there. Usage: bash scripts/gpu_wheels.sh [DIR]   (default: .gpu/wheels)
# Such machines run Python 3.12 with torch, triton, numpy, typer, rich, httpx, einops and nvcc.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/.gpu/wheels}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# Wheels left from an older list would be installed beside the new pins: start empty
# (pip's cache makes the download again cheap).
rm -f "$DIR"/*.whl
# For that machine, not this one: binary wheels only, no dependency resolution (the list
# is the closure, pinned), cp312 on x86_64 glibc.
"$ROOT/.venv/bin/python" -m pip download --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any \
  -d "$DIR" -r "$ROOT/scripts/gpu_wheels.txt"

cat > "$DIR/install.sh" <<'EOF'
#!/usr/bin/env bash
# On the GPU machine, from the repo root: installs the wheels beside this script into
# .gpu/site (no registry needed) and prints the environment to run KForge with.
set -euo pipefail
PY=${PYTHON:-python3}
SITE=.gpu/site
WHEELS=$(cd "$(dirname "$0")" && pwd)
# Skip a wheel when python3 already finds that exact version (in its own environment or in
# .gpu/site): the machine's packages stay in charge and a rerun installs nothing.
mapfile -t todo < <(PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" "$PY" - "$WHEELS"/*.whl <<'PYEOF'
import importlib.metadata as md, os, sys
for wheel in sys.argv[1:]:
    name, version = os.path.basename(wheel).split("-")[:2]
    try:
        if md.version(name) == version:
            continue
    except md.PackageNotFoundError:
        pass
    print(wheel)
PYEOF
)
if [ ${#todo[@]} -gt 0 ]; then
  # --upgrade: a wheel whose pin changed replaces the old copy in .gpu/site
  "$PY" -m pip install --no-index --no-deps --upgrade --target "$SITE" "${todo[@]}"
fi
echo "${#todo[@]} installed, $(( $(ls "$WHEELS"/*.whl | wc -l) - ${#todo[@]} )) already there. Run KForge with:"
echo "export PYTHONPATH=$PWD/$SITE:$PWD\${PYTHONPATH:+:\$PYTHONPATH} PATH=$PWD/$SITE/bin:\$PATH"
EOF

echo "$(ls "$DIR"/*.whl | wc -l) wheels, $(du -ch "$DIR"/*.whl | tail -1 | cut -f1) in $DIR"
echo "on the GPU machine, from the repo root: bash ${DIR#"$ROOT"/}/install.sh"
