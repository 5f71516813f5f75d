"""Browser tests: Playwright (sync API) driving Debian's Chromium against a real platform
(Uvicorn, Celery worker and beat on a temporary SQLite database, as tests/integration
starts it). They run in the SQLite pass; the PostgreSQL pass skips them (the servers would
use their own SQLite database anyway)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from tests.integration.servers import RUNNING, manage, platform_started

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWER, VIEWER_PASSWORD = "viewer", "viewer-Secret-Pw-123"
_names = itertools.count(1)


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    reason = None
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        reason = "browser tests run in the SQLite pass (the live servers use SQLite either way)"
    elif not CHROMIUM.exists():
        reason = "no /usr/bin/chromium (platform/test installs Debian's chromium)"
    for item in items:
        if Path(item.fspath).is_relative_to(here):
            item.add_marker(pytest.mark.integration)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="package")
def site(tmp_path_factory):
    """Stopped when the browser tests are done (package scope: an idle platform's worker and
    beat cost about a third of a core, which the rest of the suite would pay for)."""
    with platform_started(tmp_path_factory.mktemp("baton-dash")) as running:
        yield running


@pytest.fixture
def api(site):
    with site.client() as client:
        yield client


@pytest.fixture
def fresh_broker(api):
    """A new broker with queues Q1 and Q2."""
    name = f"DB{next(_names)}"
    assert api.post("/api/brokers/", json={"name": name, "transaction_timeout_ms": 60_000}).status_code == 201
    for queue in ("Q1", "Q2"):
        assert api.post(f"/api/brokers/{name}/queues/", json={"name": queue}).status_code == 201
    return name


@pytest.fixture(scope="module")
def chromium():
    """Chromium for one test module. Module scope: Playwright's sync API keeps an event loop
    running in this thread while it is open, which other tests' ``asyncio.run`` refuse; and
    Django refuses ORM calls under a running loop unless DJANGO_ALLOW_ASYNC_UNSAFE is set,
    which is done only for as long as the browser is open."""
    from playwright.sync_api import sync_playwright

    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


class Console:
    """Errors the page logged or threw."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on(
            "response",
            lambda r: (
                self.errors.append(f"HTTP {r.status}: {r.url}")
                if r.status >= 400 and r.request.resource_type != "document"
                else None
            ),
        )


@pytest.fixture
def browser_page(chromium):
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.console = Console(page)
    try:
        yield page
    finally:
        context.close()


def sign_in(page, site, username: str, password: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{site.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{site.url}/")


@pytest.fixture
def admin_page(browser_page, site):
    sign_in(browser_page, site, site.username, site.password)
    return browser_page


@pytest.fixture
def viewer_of(site):
    """Make the viewer a viewer of a broker (the user is created on first use)."""

    def grant(broker: str) -> tuple[str, str]:
        manage(
            site.env,
            "dashboard_user",
            VIEWER,
            "--role",
            "viewer",
            "--broker",
            broker,
            extra_env={"BATON_USER_PASSWORD": VIEWER_PASSWORD},
        )
        return VIEWER, VIEWER_PASSWORD

    return grant


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and RUNNING:
        for running in RUNNING:
            report.sections.append((f"server logs ({running.var_dir})", running.logs()))
