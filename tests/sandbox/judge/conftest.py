"""Judge fixture tests. Triton runs in its interpreter here (no GPU needed), so
the variable is set before anything imports triton."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
