"""After every search: distil its lessons into the knowledge base and archive
its winner. Learning never fails a job: errors are logged and reported."""

from __future__ import annotations

import logging
from typing import Any

from agents.providers import Provider
from agents.search import Trajectory
from knowledge_base.facade import KnowledgeBase
from knowledge_base.problem_identity import arch_of

log = logging.getLogger("kforge.kb")
SUMMARY_SYSTEM = "You distil what a kernel-optimisation run learned into reusable strategies. Answer in JSON."


def learn(kb: KnowledgeBase, traj: Trajectory, analysis: dict[str, Any], backend: str, job_id: str,
          provider: Provider | None = None) -> dict[str, Any]:
    summarise = None
    if provider is not None:
        def summarise(prompt: str) -> str:
            reply = provider.complete(SUMMARY_SYSTEM, [{"role": "user", "content": prompt}], max_tokens=2048)
            traj.add_usage(reply.input_tokens, reply.output_tokens, reply.cost_usd)
            return reply.text
    try:
        return kb.learn_from(traj.to_dict(), analysis, arch_of(analysis), backend, job_id, summarise)
    except Exception as exc:
        log.warning("learning from %s failed", job_id, exc_info=True)
        return {"error": f"{type(exc).__name__}: {exc}"}
