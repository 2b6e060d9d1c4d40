"""The dashboard in-process (FastAPI's TestClient on a migrated SQLite file):
escaping, the speedup chart, login and CSRF rules, live updates, admin
filters, submit validation; and the pure helpers (diff, chart, filters)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from app.api.main import create_app
from app.auth.tokens import create_token
from app.db.migrate import upgrade_database
from app.db.models import Candidate, Job
from app.db.session import engine_for
from app.deps import settings as settings_dep
from app.jobs.reading.listing import Filters
from app.settings import PROVIDERS, Settings
from app.web.batch_runs import batch_dir
from app.web.chart import best_speedup_chart
from app.web.diff import side_by_side
from app.web.security import csrf_token

HOSTILE = "<script>alert(1)</script>"
CHECKS = {"compile": "pass", "correctness": "pass", "timer_corroborated": "pass"}


def timing(median: float, speedup: float | None) -> dict:
    t = {"device": "cuda", "label": "cuda events", "candidate": {"median_ms": median, "q1_ms": median * .9,
                                                                 "q3_ms": median * 1.1, "reps": 100},
         "baseline_eager": {"median_ms": 0.02, "q1_ms": 0.019, "q3_ms": 0.021, "reps": 100}}
    if speedup:
        t["speedup_vs_eager"] = {"value": speedup, "low": speedup * .9, "high": speedup * 1.1}
    return t


@pytest.fixture
def site(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'kforge.db'}"
    upgrade_database(url)
    with Session(engine_for(url)) as s, s.begin():
        alice, alice_token = create_token(s, "alice")
        _, bob_token = create_token(s, "bob")
        _, root_token = create_token(s, "root", admin=True)
        job = Job(owner_id=alice.id, problem_name=HOSTILE, reference="class Model: pass\n", status="running",
                  gpu_kind="h100", queue="gpu-h100", config={"max_rounds": 1}, best_attempt_id="r1-c0", best_speedup=2.0)
        s.add(job)
        s.flush()
        s.add_all([
            Candidate(job_id=job.id, attempt_id="r0-c0", round=0, source="offline", verdict="pass", checks=CHECKS,
                      speedup=1.2, timing=timing(0.0166, 1.2), code="import torch\nclass ModelNew: pass\n"),
            Candidate(job_id=job.id, attempt_id="r0-c1", round=0, source="offline", verdict="fail",
                      checks={**CHECKS, "correctness": "fail"}, code="x = 1\n",
                      reasons=[f"correctness: 7 of 4096 elements differ {HOSTILE}", "review: too clever"]),
            Candidate(job_id=job.id, attempt_id="r1-c0", round=1, source="llm", parent_id="r0-c0", verdict="pass",
                      checks=CHECKS, speedup=2.0, timing=timing(0.01, 2.0), input_tokens=1000, output_tokens=200,
                      check_details={"compile": "loaded in 0.3 s, passing detail"},
                      cost_usd=0.0042, code="import torch\nimport triton\nclass ModelNew: pass\n")])
        job_id = job.id
        s.add(Job(id="e" * 8 + "-0000-4000-8000-000000000000", owner_id=alice.id, kind="evaluate",
                  problem_name="evaluate", reference="r", candidate="c", status="succeeded", config={},
                  result={"verdict": "fail", "reasons": ["correctness: 3 differ"], "checks": {"compile": "pass",
                          "correctness": "fail"}, "check_details": {"compile": "built in 0.2 s", "correctness": "3 differ"},
                          "speedup": None, "timing": {}}))
    app = create_app()
    app.dependency_overrides[settings_dep] = lambda: Settings(database_url=url, data_dir=tmp_path)
    client = TestClient(app)
    yield {"client": client, "job": job_id, "alice": alice_token, "bob": bob_token, "root": root_token}
    client.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_user_text_is_escaped_and_headers_are_strict(site):
    c, h = site["client"], bearer(site["alice"])
    for path in ("/jobs", f"/jobs/{site['job']}", f"/jobs/{site['job']}/candidates/r0-c1"):
        r = c.get(path, headers=h)
        assert r.status_code == 200 and HOSTILE not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
        assert "script-src 'self'" in r.headers["content-security-policy"] and r.headers["cache-control"] == "no-store"
    assert "http" not in re.sub(r'(href|src)="/[^"]*"', "", c.get("/jobs", headers=h).text).split("<footer")[0], \
        "a page links to another origin"


def test_job_page_shows_speedups_with_spread_and_a_chart(site):
    r = site["client"].get(f"/jobs/{site['job']}", headers=bearer(site["alice"]))
    assert "2.00× (1.80–2.20)" in r.text and "1.20× (1.08–1.32)" in r.text
    svg = r.text[r.text.index('<svg class="chart"'):r.text.index("</svg>")]
    assert svg.count("<circle") == 2 and "round 1, r1-c0: 2.00×" in svg
    assert 'data-live="/jobs/' in r.text  # running: the page polls
    assert "7 of 4096 elements differ" in r.text and "review: too clever" in r.text  # the judge's log per check
    assert "$0.0042" in r.text and "1,000 in" in r.text
    assert "loaded in 0.3 s, passing detail" in r.text  # a passing check's detail, kept per check
    diff = site["client"].get(f"/jobs/{site['job']}/candidates/r1-c0/diff", headers=bearer(site["alice"]))
    assert "r1-c0 against r0-c0" in diff.text and 'class="d-insert"' in diff.text


def test_an_evaluation_shows_its_checks_with_details(site):
    r = site["client"].get("/jobs/eeeeeeee-0000-4000-8000-000000000000", headers=bearer(site["alice"]))
    assert r.status_code == 200 and 'id="evaluation"' in r.text and "built in 0.2 s" in r.text and "3 differ" in r.text


def test_live_endpoint_sends_the_body_only_when_it_changed(site):
    c, h = site["client"], {**bearer(site["alice"]), "Accept": "application/json"}
    first = c.get(f"/jobs/{site['job']}/live", headers=h).json()
    assert first["live"] and first["status"] == "running" and "r1-c0" in first["html"]
    again = c.get(f"/jobs/{site['job']}/live", params={"v": first["version"]}, headers=h).json()
    assert again["version"] == first["version"] and "html" not in again
    assert c.get(f"/jobs/{site['job']}/live", headers={"Accept": "application/json"}).status_code == 401
    assert c.get(f"/jobs/{site['job']}/live", headers={**bearer(site["bob"]), "Accept": "application/json"}).status_code == 404


def test_login_cookie_origin_and_open_redirects(site):
    c = site["client"]
    r = c.post("/login", data={"token": site["alice"], "next": "//evil.example/x"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/jobs"
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert c.post("/login", data={"token": site["alice"]}, headers={"Origin": "http://evil.example"},
                  follow_redirects=False).status_code == 403
    assert c.post("/login", data={"token": "kf_wrong"}).status_code == 401
    assert c.get("/jobs", follow_redirects=False).status_code == 200  # the cookie from the login above
    assert c.get("/login?next=/submit", follow_redirects=False).headers["location"] == "/submit"
    assert c.get("/login?next=/%09/evil.example", follow_redirects=False).headers["location"] == "/jobs"


def test_form_posts_need_the_csrf_field_with_the_cookie(site):
    c = site["client"]
    c.cookies.set("kforge_token", site["alice"])
    form = {"problem": "level1/1_relu_scale", "reference": "class Model: pass", "max_rounds": "0"}
    assert c.post("/submit", data=form).status_code == 403
    assert c.post(f"/jobs/{site['job']}/cancel", data={}).status_code == 403
    r = c.post("/submit", data={**form, "csrf": csrf_token(site["alice"])})
    assert r.status_code == 422 and "exactly one of" in r.text  # past CSRF, refused by validation
    r = c.post("/submit", data={"reference": "class Model(:\n", "csrf": csrf_token(site["alice"])})
    assert r.status_code == 422 and "reference.py:1" in r.text and "class Model(:" in r.text  # the form is kept
    # the provider choices are the settings' one list (PROVIDERS), not a copy in the template
    select = re.search(r'<select name="provider">(.*?)</select>', r.text, re.S)
    assert select and re.findall(r"<option[^>]*>([^<]+)</option>", select.group(1)) == list(PROVIDERS)
    c.cookies.clear()
    # A bearer header cannot be forged by another site: no CSRF field needed (and none accepted instead of it).
    r = c.post("/submit", data={"problem": "../../etc/passwd"}, headers=bearer(site["alice"]))
    assert r.status_code == 422 and "no bundled problem" in r.text


def test_admin_filters_by_owner_and_users_see_only_their_own(site):
    c, job = site["client"], site["job"]
    assert job in c.get("/jobs?owner=alice", headers=bearer(site["root"])).text
    assert job not in c.get("/jobs?owner=bob", headers=bearer(site["root"])).text
    assert job not in c.get("/jobs?owner=alice", headers=bearer(site["bob"])).text  # not an admin: ignored
    r = c.get(f"/jobs/{job}", headers=bearer(site["bob"]))
    assert r.status_code == 404 and HOSTILE not in r.text and "&lt;script" not in r.text
    assert c.get("/jobs?status=bogus&from=tomorrow", headers=bearer(site["alice"])).text.count('class="error"') == 2


def test_knowledge_base_pages_search_and_show_evidence(site):
    c, h = site["client"], bearer(site["alice"])
    r = c.get("/kb?q=online+softmax+over+long+rows", headers=h)
    assert r.status_code == 200 and 'data-strategy="seed-online-softmax"' in r.text
    assert r.text.index("seed-online-softmax") < r.text.index("</tbody>")
    assert 'data-strategy="seed-online-softmax"' in c.get("/kb?family=softmax", headers=h).text
    page = c.get("/kb/seed-online-softmax", headers=h)
    assert "Online softmax" in page.text and "Evidence" in page.text
    assert c.get("/kb/no-such-strategy", headers=h).status_code == 404


def test_empty_batch_page_and_unauthenticated_redirects(site):
    c = site["client"]
    c.app.dependency_overrides[batch_dir] = lambda: None
    for path, text in (("/batch", "No runs folder is configured"), ("/kb", "Knowledge base")):
        assert text in c.get(path, headers=bearer(site["alice"])).text
        r = c.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == f"/login?next=%2F{path[1:]}"
    assert c.get("/batch/any", headers=bearer(site["alice"])).status_code == 404
    assert c.get("/static/kforge.css").status_code == 200


def test_side_by_side_diff_pairs_lines():
    rows, stats = side_by_side("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(r.kind, r.left_no, r.right_no) for r in rows] == [
        ("equal", 1, 1), ("replace", 2, 2), ("equal", 3, 3), ("insert", None, 4)]
    assert stats == {"added": 1, "removed": 0, "changed": 1}


def test_chart_is_none_without_gpu_timing_and_tracks_the_best():
    cpu = [{"index": 0, "candidates": [{"verdict": "pass", "speedup": None, "attempt_id": "r0-c0"}]}]
    assert best_speedup_chart(cpu) is None
    gpu = [{"index": 0, "candidates": [{"verdict": "pass", "speedup": 1.5, "attempt_id": "r0-c0"}]},
           {"index": 1, "candidates": [{"verdict": "pass", "speedup": 1.2, "attempt_id": "r1-c0"},
                                       {"verdict": "fail", "speedup": None, "attempt_id": "r1-c1"}]}]
    chart = best_speedup_chart(gpu)
    ys = [float(p.split(",")[1]) for p in chart.line.split()]
    assert len(chart.dots) == 2 and ys[0] == ys[1]  # the best so far never drops


def test_filters_parse_and_round_trip():
    f = Filters.parse({"status": "running", "backend": "cuda", "from": "2025-02-01", "to": "nope", "owner": "x",
                       "q": "  soft  "}, admin=False)
    assert (f.status, f.backend, f.q, f.owner, str(f.date_from), f.date_to) == ("running", "cuda", "soft", "", "2025-02-01", None)
    assert f.errors and f.url(before="c") == "/jobs?status=running&backend=cuda&q=soft&from=2025-02-01&before=c"
