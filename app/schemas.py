"""Request and response bodies of the REST API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from .backends import BackendChoice
from .settings import PROVIDERS

MAX_SOURCE = 200_000


def storable(value: str) -> str:
    """Text the databases can keep as it was sent: PostgreSQL refuses NUL in
    text, and a lone surrogate cannot be encoded as UTF-8 by any driver."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000) characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("must be valid Unicode (an unpaired surrogate was found)") from exc
    return value


Text = Annotated[str, AfterValidator(storable)]
REQUEST = ConfigDict(extra="forbid", allow_inf_nan=False)


class BackendOut(BaseModel):
    name: str
    language: str = Field(description="what its kernels are written in")
    device: Literal["gpu", "cpu"] = Field(description="where its kernels run (and are timed)")


class BackendsOut(BaseModel):
    backends: list[BackendOut]
    choices: list[str] = Field(description="what JobCreate.backend accepts: `auto` (a GPU -> triton, none -> cpu, "
                                           "resolved where the job runs) or a backend's name")


class ErrorOut(BaseModel):
    """The one body of every 4xx and 5xx response."""

    detail: str = Field(description="What went wrong, for a person to read.")
    errors: list[str] = Field(default=[], description="One line per invalid field, when the request was invalid.")
    request_id: str | None = Field(None, description="The X-Request-ID of the request; quote it when reporting.")


class JobCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, json_schema_extra={"examples": [
        {"reference": "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                      "        return torch.relu(x)\n\nn = 4096\n\ndef get_inputs():\n    return [torch.randn(n)]\n\n"
                      "def get_init_inputs():\n    return []\n", "max_rounds": 2},
        {"problem": "level1/1_relu_scale", "provider": "openai", "model": "gpt-4.1", "gpu_kind": "h100"}]})

    reference: Text | None = Field(None, max_length=MAX_SOURCE, description="Reference source (KernelBench format).")
    problem: Text | None = Field(None, max_length=200, description="A bundled problem, e.g. level1/1_relu_scale.")
    name: Text | None = Field(None, max_length=200, description="Display name; defaults to the problem's.")
    backend: BackendChoice = Field("auto", description=(
        "Kernel language: auto (the worker picks triton when it sees a GPU, cpu when it sees none, and records "
        "why in config.backend_choice), triton, cuda, or cpu (C/C++ judged and timed on the CPU; implies device "
        "cpu)."))
    gpu_kind: str | None = Field(None, pattern=r"^[a-z0-9_-]{1,32}$", description="Routes to queue gpu-<kind>.")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    provider: Literal[PROVIDERS] = "offline"  # type: ignore[valid-type]
    model: Text | None = Field(None, max_length=100)
    base_url: Text | None = Field(None, max_length=500)
    max_rounds: int = Field(3, ge=0, le=50)
    candidates_per_round: int = Field(2, ge=1, le=16)
    max_repairs: int = Field(2, ge=0, le=10)
    max_cost_usd: float | None = Field(None, gt=0, le=1e6)
    max_tokens: int | None = Field(None, gt=0, le=10**9)
    max_wall_s: float | None = Field(None, gt=0, le=7 * 86400)
    target_speedup: float | None = Field(None, gt=0, le=1e6)

    @model_validator(mode="after")
    def one_source(self) -> JobCreate:
        if (self.reference is None) == (self.problem is None):
            raise ValueError("give exactly one of `reference` (source) or `problem` (a bundled problem name)")
        return self


class EvaluateCreate(BaseModel):
    model_config = REQUEST

    reference: Text = Field(max_length=MAX_SOURCE)
    candidate: Text = Field(max_length=MAX_SOURCE)
    gpu_kind: str | None = Field(None, pattern=r"^[a-z0-9_-]{1,32}$")
    device: Literal["auto", "cpu", "cuda"] = "auto"
    wait_s: float = Field(0, ge=0, le=600, description="Wait up to this long for the verdict.")


class CandidateOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    attempt_id: str
    round: int
    strategy: str
    source: str
    parent_id: str | None
    repair_of: str | None
    verdict: str
    reasons: list[str]
    checks: dict[str, str]
    check_details: dict[str, str] | None = None  # what the judge saw, per check (passing ones too)
    speedup: float | None
    timing: dict[str, Any]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    elapsed_s: float


class JobOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    kind: str
    status: str
    problem_name: str
    backend: str
    gpu_kind: str | None
    queue: str
    provider: str
    model: str | None
    owner: str
    created_at: AwareDatetime = Field(description="RFC 3339, UTC.")
    started_at: AwareDatetime | None
    finished_at: AwareDatetime | None
    best_speedup: float | None
    best_attempt_id: str | None
    error: str | None
    runs: int
    candidates_count: int = 0


class ComparisonOut(BaseModel):
    """The fastest of {best kernel, eager PyTorch, torch.compile}, timed in the best kernel's judge run."""

    fastest: Literal["kernel", "eager", "torch.compile", "unknown"] = Field(description=(
        "unknown when no speedup was measured (Triton's interpreter on the CPU) or there is no verified kernel."))
    summary: str = Field(description="The comparison in plain words.")
    recommendation: str = Field(description="What to run: the kernel, the reference (eager) or torch.compile.")
    attempt_id: str | None = Field(None, description="The best verified kernel compared.")
    kernel_ms: float | None = Field(None, description="Median time of the kernel, ms.")
    eager_ms: float | None = Field(None, description="Median time of eager PyTorch (the reference), ms.")
    compile_ms: float | None = Field(None, description="Median time of torch.compile of the reference, ms.")
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    label: str = Field("", description="What the timing was measured on.")
    kernel_beats_eager: bool = False


class RegionOut(BaseModel):
    index: int = Field(description="The region's place in forward order, from 1.")
    kernel: str = Field(description="What one kernel computes there: its family and the ops fused into it "
                                    "(`matmul + add`, `conv + relu`, `reshape` for a view that moves no data).")


class JobDetail(JobOut):
    comparison: ComparisonOut | None = Field(None, description=(
        "Optimisation jobs: whether the best kernel is worth using (null for evaluation jobs)."))
    config: dict[str, Any]
    rounds: list[dict[str, Any]]
    result: dict[str, Any] | None
    usage: dict[str, float] | None
    strategies_used: list[dict[str, Any]] = []
    regions: list[RegionOut] = Field([], description=(
        "The best kernel's regions, in forward order, where it is a whole model cut into kernels (the offline "
        "engine's pipeline: one kernel per region); empty otherwise."))


class JobPage(BaseModel):
    items: list[JobOut]
    total: int
    limit: int
    offset: int


class EvaluateOut(BaseModel):
    id: str
    status: str
    result: dict[str, Any] | None
    error: str | None
