"""Batch evaluation: a suite of problems through the search, in parallel and
resumable, with KernelBench-style metrics and reports.

```
suite.py     discovery: our problems/ or a KernelBench checkout, filtered by level and glob
run.py       run_batch: (problem, sample) tasks across worker processes; summary.json marks one done
task.py      one task in a worker: search, final evaluation, held-out sizes
through_api.py the same task through a running KForge API (POST /v1/jobs, GET /v1/jobs/{id})
heldout.py   references with their size constants scaled to sizes the agent never saw
metrics.py   correctness, fast_p, geometric-mean speedup, cost, held-out generalisation
report.py    report.json / .csv / .md;  html.py  the self-contained report.html
compare.py   per-problem changes between two runs
```
"""
