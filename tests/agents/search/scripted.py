"""Scripted model replies for search-loop tests: a plan, a broken candidate,
its repair, and an approving review."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROBLEM = ROOT / "problems" / "level1" / "1_relu_scale.py"
GOOD = (ROOT / "problems" / "level1" / "solutions" / "relu_scale" / "correct_triton.py").read_text()
# A syntax error on line 13 of the candidate (the kernel's store line).
BROKEN = GOOD.replace("tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)",
                      "tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask")

PLAN = '```json\n{"strategies": [{"title": "fused relu-scale kernel", "rationale": "one pass over memory", ' \
       '"steps": "load, max with 0, multiply, store"}]}\n```'
CODER_BROKEN = "One fused kernel.\n```python\n" + BROKEN + "```"
CODER_FIXED = "Closed the parenthesis.\n```python\n" + GOOD + "```"
REVIEW = '```json\n{"verdict": "approve", "concerns": [], "advice": "try a larger block"}\n```'

SCRIPT = [PLAN, CODER_BROKEN, CODER_FIXED, REVIEW]
