"""The judge's cache of native libraries built in the sandbox.

Written only by the judge process (the bytes come back from a build job in
the sandbox); sandboxes see it read-only: the docker driver mounts it
read-only, and the process driver's isolated runner remounts every path but
its scratch root read-only. Files are named by ``source_key`` and never
change once written (written to a temporary name, then renamed).

Next to each library (``KEY.so``) lies what the build's inspection found
about the code that compiled (``KEY.facts.json``, see
``runner/native/facts``): a cached library is judged by the source policy
like a fresh one, so a library without its facts (or with facts of another
version) is no cache hit, and the facts are written before the library.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile

from ..runner.native.facts import FACTS_VERSION

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


def facts_path(key: str) -> str:
    return path_for(key)[:-len(".so")] + ".facts.json"


def cached_facts(key: str) -> str | None:
    """The stored facts of ``key`` if they are of the current version (``runner/native/facts``)."""
    try:
        with open(facts_path(key), encoding="utf-8") as f:
            text = f.read()
        return text if json.loads(text).get("v") == FACTS_VERSION else None
    except (OSError, ValueError, AttributeError):
        return None


def lookup(key: str) -> str | None:
    """The library of a complete entry (library and current facts), else None."""
    path = path_for(key)
    return path if os.path.isfile(path) and cached_facts(key) is not None else None


def _write(target: str, directory: str, data: bytes) -> None:
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


def store(key: str, data: bytes, facts: str) -> str:
    """Stores the library and its facts (the facts first: a reader that finds the library finds them)."""
    target = path_for(key)
    directory = ensure()
    _write(facts_path(key), directory, facts.encode("utf-8"))
    _write(target, directory, data)
    return target
