"""API tokens: random, shown once, stored as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..db.base import utcnow
from ..db.models import ApiToken, User
from ..errors import NotAuthenticated

PREFIX = "kf_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(session: Session, user_name: str, token_name: str | None = None,
                 admin: bool = False) -> tuple[User, str]:
    """Creates the user on first use; returns the plain token (never stored)."""
    user = session.scalar(select(User).where(User.name == user_name))
    if user is None:
        user = User(name=user_name, is_admin=admin)
        session.add(user)
        session.flush()
    elif admin and not user.is_admin:
        user.is_admin = True
    token = PREFIX + secrets.token_urlsafe(32)
    session.add(ApiToken(user_id=user.id, name=token_name or user_name, token_hash=hash_token(token),
                         prefix=token[:10]))
    session.flush()
    return user, token


def authenticate(session: Session, token: str) -> User:
    row = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token),
                                                ApiToken.revoked_at.is_(None)))
    if row is None:
        raise NotAuthenticated("invalid or revoked API token")
    now = utcnow()
    # A write per request would serialise reads on the token row; a minute's precision is enough.
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        row.last_used_at = now
    return row.user


class TokenCache:
    """Verified tokens remembered for `ttl_s` seconds in this process, keyed by
    hash: a read then costs no database round trip. The user comes back as a
    detached copy (id, name, is_admin), never attached to a session."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.entries: dict[str, tuple[float, User]] = {}
        self.lock = threading.Lock()

    def lookup(self, token: str) -> User | None:
        """The user when the token was verified less than `ttl_s` ago; None otherwise."""
        hit = self.entries.get(hash_token(token))
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        return None

    def authenticate(self, session: Session, token: str) -> User:
        key, now = hash_token(token), time.monotonic()
        user = authenticate(session, token)
        with self.lock:
            if len(self.entries) > 10_000:
                self.entries = {k: v for k, v in self.entries.items() if v[0] > now}
            copy = User(id=user.id, name=user.name, is_admin=user.is_admin)
            self.entries[key] = (now + self.ttl_s, copy)
        return copy
