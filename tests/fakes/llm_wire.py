"""The OpenAI, Anthropic and Gemini wire formats, as far as our providers use them.

Bodies follow the vendors' documented shapes closely enough that the official
SDKs parse replies into their real objects and raise their real exception
classes for error statuses; that is the whole point of the fake.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Api = Literal["openai", "anthropic", "gemini"]
APIS: tuple[Api, ...] = ("openai", "anthropic", "gemini")
# Gemini names the model in the path: /v1beta/models/<model>:generateContent
GEMINI_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")

_ids = itertools.count(1)


@dataclass
class Reply:
    """One scripted answer. A status other than 200 becomes that vendor's error body, `text` its message."""

    text: str = ""
    status: int = 200
    headers: dict[str, str] | None = None
    delay_s: float = 0.0
    """Wait this long before answering: longer than the client's time-out simulates a hung server."""
    model: str | None = None
    """Model name to report; by default the one the request asked for."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    """Token counts to report; by default a word count of prompt and text."""
    error_type: str | None = None
    """Vendor error type for an error status; by default the one the vendor uses for that status."""
    raw: str | None = None
    """Send this body verbatim as text/html instead of the vendor's JSON (a server that is not an LLM API)."""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Reply:
        """A reply from one line of a JSONL script (unknown keys such as "api" are ignored)."""
        names = cls.__dataclass_fields__.keys()
        return cls(**{key: value for key, value in obj.items() if key in names})


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server saw it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: Api | None
    received_at: float = field(default_factory=time.monotonic)

    @property
    def model(self) -> str | None:
        if self.api == "gemini":
            match = GEMINI_PATH.match(self.path)
            return match.group("model") if match else None
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def prompt_text(self) -> str:
        """System prompt and every message's text, joined: what the model was shown."""
        if not isinstance(self.body, dict):
            return ""
        if self.api == "gemini":  # systemInstruction and contents, each a list of parts
            turns = [self.body.get("systemInstruction") or {}, *self.body.get("contents", [])]
            parts = [_text_of(t.get("parts")) for t in turns if isinstance(t, dict)]
            return "\n".join(part for part in parts if part)
        parts = [_text_of(self.body.get("system"))]
        parts += [_text_of(m.get("content")) for m in self.body.get("messages", []) if isinstance(m, dict)]
        return "\n".join(part for part in parts if part)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body, "api": self.api}


def _text_of(content: Any) -> str:
    """Text of a content field: a string, or a list of blocks with "text" (both vendors allow that)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per whitespace-separated word."""
    return len(text.split())


_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
# google.rpc status names of the HTTP statuses
_GEMINI_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def success_body(api: Api, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
    """A 200 body in the vendor's shape."""
    model = reply.model or request.model or "fake-model"
    n_in = reply.input_tokens if reply.input_tokens is not None else count_tokens(request.prompt_text)
    n_out = reply.output_tokens if reply.output_tokens is not None else count_tokens(reply.text)
    serial = next(_ids)
    if api == "gemini":
        return {
            "candidates": [{"content": {"role": "model", "parts": [{"text": reply.text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": n_in, "candidatesTokenCount": n_out,
                              "totalTokenCount": n_in + n_out},
            "modelVersion": model,
            "responseId": f"fake{serial}",
        }
    if api == "openai":
        return {
            "id": f"chatcmpl-fake{serial}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }
    return {
        "id": f"msg_fake{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": n_in, "output_tokens": n_out},
    }


def error_body(api: Api | None, status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    """An error body in the vendor's shape, so the SDK raises the class it would for the real service."""
    message = message or f"fake server error (HTTP {status})"
    if api == "gemini":
        status_name = error_type or _GEMINI_STATUSES.get(status, "UNKNOWN")
        return {"error": {"code": status, "message": message, "status": status_name}}
    if api == "anthropic":
        kind = error_type or _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": error_type or kind, "param": None, "code": code}}


def models_body(models: tuple[str, ...]) -> dict[str, Any]:
    """GET /v1/models in OpenAI's shape (clients use it to check a server is up)."""
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "kforge-fake"} for name in models]
    return {"object": "list", "data": data}
