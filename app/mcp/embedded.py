"""The embedded backend: everything on this machine, no service to run.

- evaluate: a warm in-process judge (sandboxed runners, as everywhere), run
  in a worker thread so the event loop keeps answering and reporting progress.
- submit: a job in the service database (KFORGE_DATABASE_URL, or the SQLite
  file in KFORGE_DATA_DIR that `kforge serve` uses), run by a background
  thread of this process with the workers' own `execute_job` (app/jobs/execute.py): same lease,
  heartbeat and per-attempt persistence. `kforge serve` shows these jobs; a
  job left running when this process exits resumes when `kforge mcp` starts
  again or when a `kforge worker`/`serve` reaper finds its stale heartbeat.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from sqlalchemy import select

from agents.search import compare_record
from sandbox import JudgeError

from ..db.models import User
from ..db.session import transaction
from ..jobs.create import create_job
from ..jobs.lease import unfinished_jobs
from ..jobs.reading import views as svc
from ..schemas import JobCreate
from ..settings import Settings, get_settings
from .backend import Progress, Source, Submission
from .knowledge import local_knowledge, strategy_filters
from .models import BestKernel, Evaluation, JobReport

log = logging.getLogger("kforge.mcp")
LOCAL_USER = "mcp"
T = TypeVar("T")


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or get_settings()
        self._judge: Any = None   # a warm sandbox.Judge, made by the first evaluation
        self._judge_lock = threading.Lock()   # one evaluation at a time on the warm runner
        self._db_lock = threading.Lock()
        self._user_id: int | None = None
        self._jobs: queue.Queue[str] = queue.Queue()
        self._runner: threading.Thread | None = None
        self._runner_lock = threading.Lock()

    def start(self) -> None:
        """Prepare the database and resume unfinished jobs, off the event loop and the client's handshake."""
        def prepare() -> None:
            try:
                self._ensure_user()
            except Exception as exc:  # reported again, as a tool error, by the first call that needs it
                log.warning("the KForge database is not ready: %s: %s", type(exc).__name__, exc)

        threading.Thread(target=prepare, daemon=True, name="kforge-mcp-prepare").start()

    # -- evaluation ---------------------------------------------------------

    async def evaluate(self, reference: Source, candidate: str, device: str | None, gpu_kind: str | None,
                       progress: Progress) -> Evaluation:
        def judge() -> dict[str, Any]:
            from sandbox import Judge  # torch comes with it: not before the first evaluation

            from ..compose import eval_options, guarded

            options = eval_options(self.settings, device=device)
            with self._judge_lock:
                if self._judge is None:
                    self._judge = Judge(warm=True)
                evaluator = guarded(self._judge, options.device, self.settings, always=True)
                try:
                    return evaluator.evaluate(reference.text, candidate, reference.filename, "candidate.py",
                                              options).to_json()
                except JudgeError:
                    raise
                except Exception as exc:  # the judge never crashes the server on a user's files
                    log.exception("internal error in the judge")
                    raise JudgeError(f"internal error in the judge ({type(exc).__name__}: {exc}); "
                                     "please report it") from exc

        await progress(0, None, "judging in the sandbox: the reference, then the candidate")
        return Evaluation.of(await _in_thread(judge, progress, "judging"))

    # -- jobs ---------------------------------------------------------------

    async def submit(self, spec: Submission) -> JobReport:
        # The server's device is the default, except for backend cpu, which runs on the CPU whatever it says.
        default = {} if spec.options.get("backend") == "cpu" else {"device": self.settings.device}
        body = JobCreate.model_validate({**default, **spec.body()})

        def create() -> dict[str, Any]:
            with transaction(self.settings.db_url) as s:
                job = create_job(s, self._user(s), body)
                job_id = job.id
            self._run_in_background(job_id)
            return self._detail(job_id)

        return JobReport.of(await anyio.to_thread.run_sync(create))

    async def job_detail(self, job_id: str) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self._detail, job_id)

    async def best(self, job_id: str) -> BestKernel:
        def read() -> BestKernel:
            with transaction(self.settings.db_url) as s:
                code, cand = svc.best_code(s, self._user(s), job_id)
                comparison = compare_record({"verdict": cand.verdict, "timing": cand.timing,
                                             "attempt_id": cand.attempt_id}).to_json()
                return BestKernel(job_id=job_id, attempt_id=cand.attempt_id, code=code, verdict=cand.verdict,
                                  speedup=cand.speedup, strategy=cand.strategy, round=cand.round,
                                  comparison=comparison)

        return await anyio.to_thread.run_sync(read)

    async def search_strategies(self, query: str, k: int, backend: str | None, op_family: str | None,
                                mode: str) -> list[dict[str, Any]]:
        def search() -> list[dict[str, Any]]:
            return local_knowledge(self.settings.db_url).search(query, k, strategy_filters(backend, op_family), mode)

        return await anyio.to_thread.run_sync(search)

    def _detail(self, job_id: str) -> dict[str, Any]:
        with transaction(self.settings.db_url) as s:
            return svc.job_detail(svc.visible_job(s, self._user(s), job_id, detail=True))

    def _user(self, session: Any) -> User:
        return session.get(User, self._ensure_user())

    def _ensure_user(self) -> int:
        """The local user "mcp", an admin: whoever runs this server can read the database anyway."""
        with self._db_lock:
            if self._user_id is None:
                self._prepare()
                with transaction(self.settings.db_url) as s:
                    user = s.scalar(select(User).where(User.name == LOCAL_USER))
                    if user is None:
                        user = User(name=LOCAL_USER, is_admin=True)
                        s.add(user)
                        s.flush()
                    self._user_id = user.id
            return self._user_id

    def _prepare(self) -> None:
        """Migrate the embedded SQLite database (as `kforge serve` does) and resume this user's unfinished jobs."""
        if self.settings.db_url.startswith("sqlite"):
            from ..db.migrate import upgrade_database

            upgrade_database(self.settings.db_url)
        with transaction(self.settings.db_url) as s:
            unfinished = unfinished_jobs(s, LOCAL_USER)
        for job_id in unfinished:
            self._run_in_background(job_id)

    def _run_in_background(self, job_id: str) -> None:
        self._jobs.put(job_id)
        with self._runner_lock:
            if self._runner is None:
                # A daemon thread: the server exits when its client goes; the job's heartbeat then goes stale.
                self._runner = threading.Thread(target=self._run_jobs, daemon=True, name="kforge-mcp-jobs")
                self._runner.start()

    def _run_jobs(self) -> None:
        from ..jobs.execute import execute_job

        while True:
            job_id = self._jobs.get()
            try:
                log.info("job %s: %s", job_id, execute_job(job_id, self.settings))
            except Exception:  # execute_job records failures itself; keep serving the queue
                log.exception("job %s could not be run", job_id)

    async def close(self) -> None:
        # Never wait for an evaluation in progress: its runner goes with this process.
        if self._judge is not None and self._judge_lock.acquire(blocking=False):
            try:
                self._judge.close()
            finally:
                self._judge_lock.release()


async def _in_thread(fn: Callable[[], T], progress: Progress, label: str, every_s: float = 1.0) -> T:
    """Run ``fn`` in a worker thread, reporting elapsed time as progress until it returns."""
    started = time.monotonic()
    outcome: dict[str, Any] = {}

    async def tick() -> None:
        n = 0
        while True:
            await anyio.sleep(every_s)
            n += 1
            await progress(n, None, f"{label}: {time.monotonic() - started:.0f} s")

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        try:
            outcome["value"] = await anyio.to_thread.run_sync(fn)
        except Exception as exc:
            outcome["error"] = exc
        finally:
            tg.cancel_scope.cancel()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
