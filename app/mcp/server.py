"""The MCP tools. Each returns a typed model as structuredContent (its schema
is the tool's outputSchema) with a readable summary as text; failures the
user can act on come back as tool errors (isError) with a clear message."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from sandbox import JudgeError
from sandbox import list_problems as suite

from ..backends import Backend, BackendChoice, device_for
from ..errors import KForgeError
from ..settings import PROVIDERS
from .backend import Backend as Service
from .backend import Source, Submission, follow, problems_dir
from .models import BestKernel, Evaluation, JobReport, ProblemInfo, ProblemList, StrategyHits

log = logging.getLogger("kforge.mcp")

INSTRUCTIONS = """KForge judges kernels (Triton and CUDA C++ for GPUs, C/C++ for CPUs: backend cpu, which
submit_optimization's default backend auto picks where no GPU is visible) written to
replace a PyTorch reference, and searches for faster ones. A reference (KernelBench format) defines `Model`, `get_inputs()` and
`get_init_inputs()`; a candidate defines `ModelNew` with the same constructor and forward signature and
must launch its own kernel. Work in a loop: write the candidate, call evaluate_kernel, read `reasons`
(each names the failed check and why), fix exactly that, and evaluate again until the verdict is
pass; then aim for a higher `speedup`. search_strategies suggests optimisation strategies; list_problems
names bundled problems usable as `reference`; submit_optimization runs KForge's own search as a job
(follow it with job_status, fetch the result with best_kernel)."""

Reference = Annotated[str, Field(description=(
    "The reference: Python source defining Model, get_inputs and get_init_inputs (KernelBench format), "
    "or the name of a bundled problem from list_problems, e.g. 'level1/1_relu_scale'."))]
Device = Annotated[Literal["auto", "cpu", "cuda"] | None, Field(description=(
    "Where to judge: cuda times on the GPU; cpu runs Triton in its interpreter (correctness only, no "
    "speedup) and times native C kernels (backend cpu) for real. Default: the server's setting "
    "(KFORGE_DEVICE, normally auto); backend cpu implies cpu."))]
KernelBackend = Annotated[Backend, Field(description=(
    "The kernel language: triton, cuda (CUDA C++) or cpu (C/C++ through kforge_native.load_c, judged and timed "
    "on the CPU)."))]
JobBackend = Annotated[BackendChoice, Field(description=(
    "The kernel language of the search: auto (default: triton where the worker sees a GPU, cpu where it sees "
    "none, so a CPU-only machine gets measured speedups; the job says which and why), triton, cuda or cpu."))]
GpuKind = Annotated[str | None, Field(pattern=r"^[a-z0-9_-]{1,32}$", description=(
    "Remote service only: route to the workers of this GPU kind (queue gpu-<kind>), e.g. 'h100'."))]
WaitS = Annotated[float, Field(ge=0, le=600, description=(
    "Wait up to this many seconds for the job to finish, reporting progress meanwhile; 0 returns at once."))]
JobId = Annotated[str, Field(min_length=1, max_length=64, description="The id submit_optimization returned.")]


def build_server(service: Service) -> MCPServer:
    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        service.start()
        try:
            yield
        finally:
            await service.close()

    server = MCPServer("kforge", title="KForge", version="0.1.0", instructions=INSTRUCTIONS, lifespan=lifespan)
    _judge_tools(server, service)
    _job_tools(server, service)
    _suite_tools(server, service)
    return server


READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


def _judge_tools(server: MCPServer, service: Service) -> None:
    """evaluate_kernel: one candidate judged."""

    @server.tool(title="Judge a kernel", annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=False))
    async def evaluate_kernel(
        ctx: Context,
        reference: Reference,
        candidate: Annotated[str, Field(min_length=1, description=(
            "The candidate: Python source defining ModelNew (same constructor and forward signature as Model) "
            "that computes the same result with its own Triton or CUDA kernel."))],
        device: Device = None,
        gpu_kind: GpuKind = None,
        backend: KernelBackend | None = None,
    ) -> Annotated[CallToolResult, Evaluation]:
        """Judge a candidate kernel against its reference in KForge's sandbox: correctness on fresh random
        inputs at the default and at perturbed sizes, anti-cheat checks (it must launch its own kernel and
        must not call the reference's torch ops, tamper with timers, or leave work running) and, on a GPU,
        the speedup over eager PyTorch. `verdict` is pass only when every check passes; otherwise `reasons`
        says which checks failed and why. Takes seconds to a few minutes; progress is reported."""
        with tool_errors():
            source = Source.of(reference)
            device = device_for(backend, device) if backend else device
            return result(await service.evaluate(source, candidate, device, gpu_kind, ctx.report_progress))


def _job_tools(server: MCPServer, service: Service) -> None:
    """submit_optimization, job_status, best_kernel: a search as a background job."""

    @server.tool(title="Start an optimisation job", annotations=ToolAnnotations(readOnlyHint=False,
                                                                                destructiveHint=False))
    async def submit_optimization(
        ctx: Context,
        reference: Reference,
        max_rounds: Annotated[int, Field(ge=0, le=50, description=(
            "LLM rounds after round 0 (which judges the offline engine's starter kernels)."))] = 3,
        provider: Annotated[Literal[PROVIDERS], Field(description=(  # type: ignore[valid-type]
            "Who writes kernels: offline = KForge's own starter kernels only; " + " / ".join(PROVIDERS[1:])
            + " need the service's keys."))] = "offline",
        model: Annotated[str | None, Field(max_length=100, description="The provider's model name.")] = None,
        backend: JobBackend = "auto",
        device: Device = None,
        gpu_kind: GpuKind = None,
        candidates_per_round: Annotated[int, Field(ge=1, le=16)] = 2,
        target_speedup: Annotated[float | None, Field(gt=0, description="Stop once this speedup is reached.")] = None,
        max_cost_usd: Annotated[float | None, Field(gt=0)] = None,
        name: Annotated[str | None, Field(max_length=200, description="Display name.")] = None,
        wait_s: WaitS = 0,
    ) -> Annotated[CallToolResult, JobReport]:
        """Start KForge's search for a faster verified kernel as a background job and return its id and
        status. Follow it with job_status (wait_s there waits and reports progress) and fetch the result with
        best_kernel."""
        with tool_errors():
            spec = Submission(Source.of(reference), {
                "max_rounds": max_rounds, "provider": provider, "model": model, "backend": backend,
                "device": device, "gpu_kind": gpu_kind, "candidates_per_round": candidates_per_round,
                "target_speedup": target_speedup, "max_cost_usd": max_cost_usd, "name": name})
            status = await service.submit(spec)
            if wait_s > 0:
                status = await follow(service, status.job_id, wait_s, ctx.report_progress)
            return result(status)

    @server.tool(title="Follow a job", annotations=READ_ONLY)
    async def job_status(ctx: Context, job_id: JobId, wait_s: WaitS = 0) -> Annotated[CallToolResult, JobReport]:
        """A job's status (queued, running, succeeded, failed, cancelled) and progress: rounds done of those
        planned, candidates judged and passed, the best speedup so far, and the last candidates with their
        verdicts and reasons. With wait_s, waits for the job to finish, reporting progress meanwhile."""
        with tool_errors():
            return result(await follow(service, job_id, wait_s, ctx.report_progress))

    @server.tool(title="Get the best kernel", annotations=READ_ONLY)
    async def best_kernel(job_id: JobId) -> Annotated[CallToolResult, BestKernel]:
        """The code of a job's best verified kernel (a complete candidate file defining ModelNew), with its
        verdict, speedup and the strategy that produced it, led by `comparison`: the fastest of the kernel,
        eager PyTorch and torch.compile in the same judge run, and whether to use the kernel or keep the
        reference."""
        with tool_errors():
            return result(await service.best(job_id))


def _suite_tools(server: MCPServer, service: Service) -> None:
    """search_strategies, list_problems: the knowledge base and the bundled suite."""

    @server.tool(title="Search optimisation strategies", annotations=READ_ONLY)
    async def search_strategies(
        query: Annotated[str, Field(min_length=1, max_length=500, description=(
            "What to optimise, in words or op names, e.g. 'softmax over long rows', 'fused matmul + bias'."))],
        k: Annotated[int, Field(ge=1, le=50)] = 5,
        backend: Annotated[Backend | None, Field(description="Only strategies for it.")] = None,
        op_family: Annotated[str | None, Field(description=(
            "Only strategies for this op family: elementwise, softmax, norm, reduction, matmul, conv, attention, "
            "pool."))] = None,
        mode: Literal["hybrid", "embedding", "keyword"] = "hybrid",
    ) -> Annotated[CallToolResult, StrategyHits]:
        """Search KForge's knowledge base of kernel optimisation strategies (curated, and learned from earlier
        runs with the evidence of how they fared), best match first."""
        with tool_errors():
            found = await service.search_strategies(query, k, backend, op_family, mode)
            return result(StrategyHits(query=query, results=found))

    @server.tool(title="List bundled problems", annotations=READ_ONLY)
    async def list_problems(
        level: Annotated[int | None, Field(ge=1, le=10, description="Only this KernelBench level.")] = None,
    ) -> Annotated[CallToolResult, ProblemList]:
        """The bundled problem suite (KernelBench format): each problem's name (usable as `reference`),
        level, input shapes and size constants."""
        with tool_errors():
            root = problems_dir()
            found = [ProblemInfo(name=p["path"].removeprefix(root + "/").removesuffix(".py"), level=p.get("level"),
                                 input_shapes=p.get("input_shapes"), constants=p.get("constants") or {},
                                 error=p.get("error"))
                     for p in await anyio.to_thread.run_sync(suite, root)]
            return result(ProblemList(problems=[p for p in found if level is None or p.level == level]))


def result(model: Evaluation | JobReport | BestKernel | ProblemList | StrategyHits) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=model.summary())],
                          structured_content=model.model_dump(mode="json"))


@contextmanager
def tool_errors() -> Iterator[None]:
    """Our errors become tool errors with their own message; anything else is logged and reported by kind."""
    try:
        yield
    except ToolError:
        raise
    except (KForgeError, JudgeError) as exc:
        raise ToolError(str(exc)) from exc
    except ValidationError as exc:
        raise ToolError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from exc
    except Exception as exc:
        log.exception("tool failed")
        raise ToolError(f"unexpected error ({type(exc).__name__}): {exc}"[:1000]) from exc
