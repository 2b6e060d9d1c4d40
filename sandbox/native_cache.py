"""The judge's cache of native libraries built in the sandbox.

Written only by the judge process (the bytes come back from a build job in
the sandbox); sandboxes see it read-only: the docker driver mounts it
read-only, and the process driver's isolated runner remounts every path but
its scratch root read-only. Files are named by ``source_key`` and never
change once written (written to a temporary name, then renamed).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile

_KEY = re.compile(r"^[0-9a-f]{32}$")


class NativeCacheError(Exception):
    pass


def cache_dir() -> str:
    return os.environ.get("KFORGE_JUDGE_NATIVE_CACHE") or os.path.join(
        tempfile.gettempdir(), f"kforge-judge-native-{os.getuid()}")


def ensure() -> str:
    """The cache directory, created if needed; refuses one another user could write."""
    path = cache_dir()
    os.makedirs(path, mode=0o755, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise NativeCacheError(f"{path}: not a directory of this user that only it can write; "
                               "set KFORGE_JUDGE_NATIVE_CACHE to another place")
    if st.st_mode & 0o555 != 0o555:
        os.chmod(path, 0o755)  # sandbox users (other uids) read it
    return path


def path_for(key: str) -> str:
    if not _KEY.match(key):
        raise NativeCacheError(f"not a source key: {key!r}")
    return os.path.join(cache_dir(), f"{key}.so")


def lookup(key: str) -> str | None:
    path = path_for(key)
    return path if os.path.isfile(path) else None


def store(key: str, data: bytes) -> str:
    target = path_for(key)
    directory = ensure()
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target
