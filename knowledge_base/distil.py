"""Learning from a finished search: distil strategies from its trajectory and
merge them into the store.

Offline-engine attempts are distilled from their template family and tuned
launch parameters (always; no model needed). LLM attempts are distilled by the
caller's ``summarise`` callable (a model behind prompts/distil.md) when there is
one, and otherwise from the planner's own plan entries. Every strategy carries
the attempts that used it as evidence, failures and regressions included.
Architecture and dtype are not hard restrictions of a learned strategy (they
are in its evidence and shape regime), unless the model's summary names dtypes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from string import Template
from typing import Any

from taxonomy.op_families import TEMPLATES

from .confidence import confidence
from .merge import merge
from .model import FAMILIES, Evidence, Strategy, applies_to
from .problem_identity import op_families, problem_signature, shape_regime

__all__ = ["confidence", "distil", "distil_prompt", "merge", "parse_reply", "strategy_id"]

log = logging.getLogger("kforge.kb")
Summarise = Callable[[str], str]
PROMPT = Path(__file__).parent / "prompts" / "distil.md"
_OFFLINE = re.compile(r"^offline:\s*(\w+)\s*(\{.*\})?\s*$")
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)
_FAMILY_WORDS = {
    "elementwise": "one flat kernel for the whole elementwise graph",
    "softmax": "one program per row, online max/sum for long rows",
    "norm": "one program per row, statistics in fp32",
    "reduction": "reduced dims moved last, 2-D tiles per program",
    "matmul": "tiled tl.dot with grouped launch order and a fused epilogue",
}


def strategy_id(source: str, title: str, families: list[str]) -> str:
    key = f"{source}|{' '.join(title.lower().split())}|{','.join(sorted(families))}"
    return "kb-" + hashlib.sha1(key.encode()).hexdigest()[:12]


def _attempts(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for r in trajectory.get("rounds", []) for a in r.get("attempts", [])]


def _chains(attempts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """LLM attempts grouped by candidate: "r2-c1", "r2-c1-fix1", ... are one strategy tried and repaired."""
    chains: dict[str, list[dict[str, Any]]] = {}
    for a in attempts:
        chains.setdefault(re.sub(r"-fix\d+$", "", a["id"]), []).append(a)
    return chains


class _Evidence:
    def __init__(self, trajectory: dict[str, Any], job_id: str, arch: str, backend: str, now: float) -> None:
        self.problem = str(trajectory.get("problem", ""))
        self.signature = problem_signature(str(trajectory.get("reference", "")))
        self.job_id, self.arch, self.backend, self.now = job_id, arch, backend, now

    def of(self, attempt: dict[str, Any]) -> Evidence:
        verdict = str(attempt.get("verdict", "error"))
        speedup = attempt.get("speedup") if verdict == "pass" else None
        kernel = ((attempt.get("roofline") or {}).get("parties") or {}).get("kernel") or {}
        fraction = kernel.get("fraction") if verdict == "pass" else None
        return Evidence(self.job_id, self.problem, self.signature, str(attempt["id"]),
                        None if speedup is None else float(speedup), verdict, self.arch, self.backend, self.now,
                        None if fraction is None else float(fraction))

    def of_chain(self, chain: list[dict[str, Any]]) -> Evidence:
        """A repaired candidate counts once: its passing attempt if any, else its last."""
        passing = [a for a in chain if a.get("verdict") == "pass"]
        return self.of(passing[-1] if passing else chain[-1])


def distil(trajectory: dict[str, Any], analysis: dict[str, Any], arch: str, backend: str,
           summarise: Summarise | None = None, *, job_id: str = "", now: float | None = None,
           max_strategies: int = 5) -> list[Strategy]:
    """Candidate strategies from one finished search (not yet merged into any store)."""
    now = time.time() if now is None else now
    ev = _Evidence(trajectory, job_id, arch, backend, now)
    attempts = [a for a in _attempts(trajectory) if a.get("verdict") != "pending"]
    offline = [a for a in attempts if a.get("source") == "offline"]
    llm = [a for a in attempts if a.get("source") == "llm"]
    out = _from_offline(offline, trajectory, analysis, ev)
    if llm and summarise is not None:
        try:
            out += _from_summary(summarise, trajectory, analysis, llm, ev, max_strategies)
            return out
        except (ValueError, KeyError, TypeError) as exc:  # a malformed reply must not lose the run's lessons
            log.warning("knowledge base: the distil reply did not parse (%s); using the plan entries", exc)
    return out + _from_plans(llm, trajectory, analysis, ev)


def _from_offline(attempts: list[dict[str, Any]], trajectory: dict[str, Any], analysis: dict[str, Any],
                  ev: _Evidence) -> list[Strategy]:
    by_family: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for a in attempts:
        found = _OFFLINE.match(str(a.get("strategy", "")))
        if not found:
            continue
        try:
            params = ast.literal_eval(found.group(2)) if found.group(2) else {}
        except (ValueError, SyntaxError):
            params = {}
        by_family.setdefault(found.group(1), []).append((a, params))
    out = []
    for family, tried in by_family.items():
        ranked = sorted(tried, key=lambda t: _rank(t[0]), reverse=True)
        best, best_params = ranked[0]
        lines = [f"{_params(p)}: {_outcome(a)}" for a, p in ranked]
        won = best.get("verdict") == "pass"
        summary = (f"The offline {family} template ({_FAMILY_WORDS.get(family, 'parametrised Triton kernel')}) "
                   + (f"passed with {_params(best_params)} on {ev.arch}" if won else f"did not pass on {ev.arch}")
                   + f" for {shape_regime(analysis) or trajectory.get('problem', '')}. Launch parameters tried: "
                   + "; ".join(lines) + ".")
        rationale = ("Autotuned launch parameters of a verified template: the block size and warp count that "
                     "won here are the first to try on a problem of the same family and shape regime.")
        families = [TEMPLATES.get(family, "other")]  # the work the template's kernels do
        title = f"Offline {family} template with tuned launch parameters"
        out.append(Strategy(
            id=strategy_id("learned:offline", title, families), title=title, summary=summary, rationale=rationale,
            applies_to=applies_to(families, ["triton"], [], [], shape_regime(analysis)),
            source="learned:offline", evidence=[ev.of(a) for a, _ in tried], created_at=ev.now, updated_at=ev.now))
    return out


def _rank(a: dict[str, Any]) -> tuple[int, float]:
    return (1 if a.get("verdict") == "pass" else 0, float(a.get("speedup") or 0.0))


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"


def _outcome(a: dict[str, Any]) -> str:
    if a.get("verdict") == "pass":
        return f"pass, {a['speedup']:.2f}x" if a.get("speedup") is not None else "pass (speed not measured)"
    reasons = a.get("reasons") or []
    return f"{a.get('verdict', 'fail')} ({str(reasons[0])[:80]})" if reasons else str(a.get("verdict", "fail"))


def _plans(trajectory: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Plan entries by title (the attempt's ``strategy`` is its plan entry's title)."""
    return {str(p.get("title", "")): p for r in trajectory.get("rounds", []) for p in r.get("plan", [])}


def _known_id(text: str, trajectory: dict[str, Any]) -> str | None:
    """The id of a retrieved strategy the plan entry cites ("[seed-online-softmax]"), if any."""
    for used in trajectory.get("strategies_used", []):
        sid = str(used.get("id") or "")
        if sid and (sid in text or str(used.get("title", "")).lower() == text.split("\n")[0].strip().lower()):
            return sid
    return None


def _from_plans(attempts: list[dict[str, Any]], trajectory: dict[str, Any], analysis: dict[str, Any],
                ev: _Evidence) -> list[Strategy]:
    plans = _plans(trajectory)
    grouped: dict[str, list[list[dict[str, Any]]]] = {}
    for chain in _chains(attempts).values():
        grouped.setdefault(str(chain[0].get("strategy", "")), []).append(chain)
    families = op_families(analysis)
    out = []
    for title, chains in grouped.items():
        plan = plans.get(title, {})
        rationale = str(plan.get("rationale", ""))
        summary = str(plan.get("steps", "")) or rationale or title
        sid = _known_id(f"{title}\n{rationale}\n{summary}", trajectory) or strategy_id("learned:llm", title, families)
        out.append(Strategy(
            id=sid, title=title, summary=summary, rationale=rationale,
            applies_to=applies_to(families, [ev.backend], [], [], shape_regime(analysis)),
            source="learned:llm", evidence=[ev.of_chain(c) for c in chains], created_at=ev.now, updated_at=ev.now))
    return out


def distil_prompt(trajectory: dict[str, Any], analysis: dict[str, Any], attempts: list[dict[str, Any]],
                  arch: str, backend: str, count: int) -> str:
    listed = "\n".join(f"- {a['id']}: {a.get('strategy', '')}: {_outcome(a)}" for a in attempts) or "(none)"
    plans = "\n".join(f"- {p.get('title', '')}: {p.get('rationale', '')} {p.get('steps', '')}".strip()
                      for p in _plans(trajectory).values()) or "(none)"
    return Template(PROMPT.read_text(encoding="utf-8")).substitute(
        problem=trajectory.get("problem", ""), families=", ".join(op_families(analysis)), backend=backend,
        arch=arch, shape_regime=shape_regime(analysis) or "unknown", attempts=listed, plans=plans, count=count,
        family_names=", ".join(FAMILIES))


def parse_reply(text: str) -> list[dict[str, Any]]:
    """The ``strategies`` list of the reply's JSON (fenced or bare); ValueError when there is none."""
    blocks = _FENCE.findall(text)
    body = blocks[-1] if blocks else text[text.find("{"): text.rfind("}") + 1]
    data = json.loads(body)
    items = data.get("strategies") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError("the reply's JSON has no `strategies` list")
    return [i for i in items if isinstance(i, dict) and str(i.get("title", "")).strip()]


def _from_summary(summarise: Summarise, trajectory: dict[str, Any], analysis: dict[str, Any],
                  attempts: list[dict[str, Any]], ev: _Evidence, count: int) -> list[Strategy]:
    items = parse_reply(summarise(distil_prompt(trajectory, analysis, attempts, ev.arch, ev.backend, count)))
    by_id = {str(a["id"]): a for a in attempts}
    out = []
    for item in items[:count]:
        families = [f for f in item.get("op_families", []) if f in FAMILIES] or op_families(analysis)
        title = str(item["title"]).strip()
        used = [by_id[i] for i in map(str, item.get("attempt_ids", [])) if i in by_id]
        text = f"{title}\n{item.get('rationale', '')}\n{item.get('summary', '')}"
        out.append(Strategy(
            id=_known_id(text, trajectory) or strategy_id("learned:llm", title, families), title=title,
            summary=str(item.get("summary", "")), rationale=str(item.get("rationale", "")),
            applies_to=applies_to(families, [str(b) for b in item.get("backends", [])] or [ev.backend], [],
                                  [str(d) for d in item.get("dtypes", [])],
                                  str(item.get("shape_regime", "")) or shape_regime(analysis)),
            source="learned:llm", evidence=[ev.of_chain(c) for c in _chains(used).values()],
            created_at=ev.now, updated_at=ev.now))
    return out
