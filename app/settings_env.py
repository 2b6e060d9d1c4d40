"""What `kforge eval` needs of the settings before it asks a running judge daemon,
without pydantic (0.15 s of the command's start): where the data directory is.

The answer is Settings' own wherever it can be had without reading a .env file: the
KFORGE_DATA_DIR environment variable (which Settings ranks above a .env file, and
matches without regard to case), else the default when no .env file is there to
change it. Otherwise None: ask Settings.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_PREFIX = "KFORGE_"
ENV_FILE = ".env"
DATA_DIR_DEFAULT = Path(".kforge")


def data_dir_from_env() -> Path | None:
    wanted = f"{ENV_PREFIX}DATA_DIR".lower()
    found = [v for k, v in os.environ.items() if k.lower() == wanted]
    if len(found) == 1 and found[0]:
        return Path(found[0])
    if not found and not os.path.exists(ENV_FILE):
        return DATA_DIR_DEFAULT
    return None
