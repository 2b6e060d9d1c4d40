"""The dashboard in a real browser (Debian's Chromium via Playwright) against a
real service: PostgreSQL, Redis, `kforge api` and `kforge worker` processes,
and a real job on the offline engine. Each page's screenshot is written to
docs/screenshots/ and the page is checked for the run's data."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import httpx
from playwright.sync_api import expect

from tests.app.web.conftest import SCREENSHOTS, make_token

PROBLEM = "level1/1_relu_scale"
RUN = "level1-relu-offline"
JOB_URL = re.compile(r"/jobs/([0-9a-f-]{36})$")


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


def sign_in(browser, url: str, token: str, next_path: str = "/jobs"):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}{next_path}")
    assert "/login?next=" in page.url
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}{next_path}")
    return context, page


def test_dashboard_end_to_end(browser, procs, service_env, pg_url, tmp_path):
    alice, bob = make_token(pg_url, "alice"), make_token(pg_url, "bob")
    service_env["KFORGE_BATCH_DIR"] = str(tmp_path / "runs")
    url = procs.api()
    # A real batch run (one problem, offline, CPU; backend auto: cpu here) into the runs folder the batch pages read.
    batch = procs.start("batch", "run", "problems", "--problems", "level1/1_*", "--provider", "offline",
                        "--max-rounds", "0", "--offline-starters", "2", "--device", "cpu", "--json",
                        "--out", str(tmp_path / "runs" / RUN),
                        name="batch")
    procs.worker("web")

    # Login: a page asks for a token; a wrong one is refused, the right one sets a strict HttpOnly cookie.
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/jobs")
    assert page.url == f"{url}/login?next=%2Fjobs"
    shot(page, "login.png")
    assert page.is_visible("#token") and "API token" in page.inner_text("main")
    page.fill("#token", "kf_not-a-token")
    page.click("button[type=submit]")
    assert "not valid" in page.inner_text("[role=alert]")
    page.fill("#token", alice)
    page.click("button[type=submit]")
    page.wait_for_url(f"{url}/jobs")
    cookie = next(c for c in context.cookies() if c["name"] == "kforge_token")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert "No jobs yet" in page.inner_text("main")

    # Submit: pick a bundled problem, no LLM rounds.
    page.click("text=Submit a job")
    page.select_option("#problem", PROBLEM)
    page.fill("input[name=max_rounds]", "0")
    assert page.eval_on_selector("select[name=backend]", "e => e.value") == "auto"  # the default, left as it is
    assert "measured speedup" in page.inner_text("#backend-help")
    shot(page, "submit.png")
    assert page.eval_on_selector("#problem", "e => e.value") == PROBLEM
    page.click("form.submit button[type=submit]")
    page.wait_for_url(JOB_URL)
    job_id = JOB_URL.search(page.url).group(1)

    # Job page: live while the job runs, then succeeded without a reload.
    assert page.inner_text("#job-status") in ("queued", "running")
    assert page.get_attribute("#job", "data-live") == f"/jobs/{job_id}/live"
    page.evaluate("window.__sameDocument = true")
    expect(page.locator("#job-status")).to_have_text("succeeded", timeout=150_000)
    assert page.evaluate("window.__sameDocument === true"), "the page reloaded instead of updating in place"
    assert page.get_attribute("#job", "data-live") is None  # polling stopped at the terminal status

    verdicts = page.locator("tr.cand .v").all_inner_texts()
    assert verdicts and set(verdicts) <= {"pass", "fail", "error"} and "pass" in verdicts, verdicts
    main = page.inner_text("main")
    assert job_id in main and "1_relu_scale" in main and "no GPU timing" not in main
    # The form's default backend is auto: on this CPU-only machine the worker chose cpu, said why, and measured.
    assert page.inner_text("#job-backend") == "cpu (auto: no GPU found -> cpu)"
    assert page.inner_text("#job-device").startswith("CPU: ") and "GPU" not in page.inner_text("#job-device")
    assert page.is_visible("svg.chart") and not page.is_visible("#no-gpu")
    assert page.inner_text("#timing-caption").startswith("CPU timing") and "×" in page.inner_text("#best-speedup")
    assert "checks passed" in main and "Tokens and cost" in main
    # Against the machine's ceilings (the worker kept them before its first job): the best kernel and eager
    # as points under the roofs.
    roof = page.locator("#roofline svg.roofline")
    assert roof.locator("circle.point.kernel").count() == 1 and roof.locator("circle.point.eager").count() == 1
    assert roof.locator("polyline.roof").count() == 1 and "of the bound" in roof.locator("circle.point.kernel").text_content()
    assert page.get_attribute("a[download]", "href") == f"/v1/jobs/{job_id}/best"
    best = context.request.get(f"{url}/v1/jobs/{job_id}/best")  # the page's cookie authorises the API too
    assert best.status == 200 and "class ModelNew" in best.text()
    first, second = page.locator("tr.cand").evaluate_all("rs => rs.slice(0, 2).map(r => r.dataset.attempt)")
    page.locator(f"#checks-{first}").evaluate("d => { d.open = true; }")  # named checks, details where one failed
    assert page.locator(f"#checks-{first} table.checklist tbody tr").count() >= 10
    assert "correctness" in page.inner_text(f"#checks-{first}")
    shot(page, "job_detail.png")

    # A candidate's code, then its diff: round 0 has no parent, so against the reference; then against a sibling.
    page.click(f"tr.cand[data-attempt='{second}'] >> text=code")
    assert "class ModelNew" in page.inner_text("pre.code")
    page.goto(f"{url}/jobs/{job_id}")
    page.click(f"tr.cand[data-attempt='{second}'] a.diff-link")
    page.wait_for_url(f"{url}/jobs/{job_id}/candidates/{second}/diff")
    assert f"{second} against the reference" in page.inner_text("h1")
    assert "class Model(" in " ".join(page.locator("table.diff td.l").all_inner_texts())
    assert "class ModelNew(" in " ".join(page.locator("table.diff td.r").all_inner_texts())
    page.select_option("select[name=against]", first)
    page.click("text=Show")
    page.wait_for_url(re.compile(rf"against={first}$"))
    assert f"{second} against {first}" in page.inner_text("h1")
    assert page.locator("tr.d-replace").count() >= 1 and page.locator("tr.d-equal").count() > 20
    shot(page, "diff.png")

    # A second job that no worker serves (queue gpu-h100), cancelled while queued.
    other = httpx.post(f"{url}/v1/jobs", headers={"Authorization": f"Bearer {alice}"}, timeout=10,
                       json={"problem": "level1/10_softmax", "gpu_kind": "h100", "max_rounds": 0}).json()["id"]
    page.goto(f"{url}/jobs/{other}")
    page.click("text=Cancel job")
    page.wait_for_url(f"{url}/jobs/{other}")
    assert page.inner_text("#job-status") == "cancelled"

    # The list and its filters.
    page.goto(f"{url}/jobs")
    rows = lambda: page.locator("tr[data-job]").evaluate_all("rs => rs.map(r => r.dataset.job)")  # noqa: E731
    assert rows() == [other, job_id]
    assert "succeeded" in page.inner_text(f"tr[data-job='{job_id}']")
    shot(page, "jobs.png")
    page.select_option("select[name=status]", "succeeded")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"status=succeeded"))
    assert rows() == [job_id]
    today = datetime.now(UTC).date()
    for query, expected in (("q=softmax", [other]), ("q=relu", [job_id]), ("backend=cuda", []),
                            ("gpu=h100", [other]), ("gpu=cpu", [job_id]), ("status=cancelled&q=soft", [other]),
                            (f"from={today + timedelta(days=1)}", []), (f"from={today}&to={today}", [other, job_id])):
        page.goto(f"{url}/jobs?{query}")
        assert rows() == expected, query

    # Batch runs: the leaderboard and the run's page, from the batch run's report.json.
    assert batch.wait(timeout=240) == 0, (tmp_path / "batch.log").read_text()[-3000:]
    page.click("text=Batch runs")
    assert "100.0%" in page.inner_text(f"tr[data-run='{RUN}']")  # correct 1/1
    assert not page.is_visible("#no-gpu")  # --backend auto on this CPU-only machine: cpu, timed for real
    shot(page, "batch.png")
    page.click(f"text={RUN}")
    page.wait_for_url(f"{url}/batch/{RUN}")
    assert "correct" in page.inner_text(f"tr[data-problem='{PROBLEM}']") and not page.is_visible("#no-gpu")
    assert page.inner_text("#timing-kind").startswith("CPU wall time of native kernels")
    # the final evaluation's kernel, eager and torch.compile against the ceilings the batch kept before it ran
    points = page.locator("#roofline svg.roofline circle.point")
    assert points.count() == 3 and page.locator("#roofline circle.point.compile").count() == 1
    assert "kernel" in page.inner_text(f"tr[data-problem='{PROBLEM}'] td.roof")
    shot(page, "batch_run.png")

    # CSRF: a form post without the page's token, or from another origin, is refused.
    form = {"problem": PROBLEM, "max_rounds": "0"}
    assert context.request.post(f"{url}/submit", form=form).status == 403
    csrf = page.get_attribute("input[name=csrf]", "value")
    assert context.request.post(f"{url}/submit", form={**form, "csrf": csrf},
                                headers={"Origin": "https://evil.example"}).status == 403

    # Another user: the job's pages are missing for bob, through the form login and through the bearer header.
    bob_context, bob_page = sign_in(browser, url, bob)
    assert "No jobs yet" in bob_page.inner_text("main")
    for path in (f"/jobs/{job_id}", f"/jobs/{job_id}/candidates/{first}/diff", f"/jobs/{job_id}/candidates/{first}",
                 f"/jobs/{job_id}/live"):
        response = bob_page.goto(f"{url}{path}")
        assert response.status == 404 and "Not found" in bob_page.inner_text("h1") and "class Model" not in bob_page.content()
    assert bob_context.request.get(f"{url}/v1/jobs/{job_id}/best").status == 404
    as_alice = httpx.get(f"{url}/jobs/{job_id}", headers={"Authorization": f"Bearer {alice}"}, timeout=10)
    as_bob = httpx.get(f"{url}/jobs/{job_id}", headers={"Authorization": f"Bearer {bob}"}, timeout=10)
    assert as_alice.status_code == 200 and job_id in as_alice.text and as_bob.status_code == 404
    bob_context.close()

    # Sign out: the cookie is gone and pages ask for a token again.
    page.click("text=Sign out")
    page.wait_for_url(f"{url}/login")
    page.goto(f"{url}/jobs/{job_id}")
    assert "/login?next=" in page.url
    context.close()
