"""Open every page of the built book in headless Chromium and check it renders.

Run after a build (``make test`` does ``make book-rendered`` first). For each
HTML page under ``_build/html`` this fails if

* the page logs a JavaScript error (console error or uncaught exception), or a
  request for a file of the book fails (HTTP >= 400, network error);
* the page tries to reach any host other than the local test server (CDNs,
  fonts, analytics): the book must work offline, so such requests are blocked
  and reported;
* math is left as raw TeX: a ``.math`` element MathJax did not typeset, TeX
  delimiters (``$$``, ``\\(``, ``\\[``, ``\\begin{``) left in the prose, or a
  MathJax error box (``mjx-merror``);
* an ``<img>`` is broken (loaded with ``naturalWidth == 0``);
* the page carries saved widget state and widget views, but no widget rendered.

A full-page screenshot of every page goes to ``_build/screenshots/``.

Chromium is Debian's ``/usr/bin/chromium`` (``make browser-deps``), driven by
the ``playwright`` package's sync API; ``playwright install`` is never needed.
Locally a missing Chromium, playwright or ``_build/html`` skips these tests
with the reason; in CI (``CI=true``) it fails them.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path(os.environ.get("TFX_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--disable-quic",
]
# Folders of the build that hold assets, not pages of the book.
NOT_PAGES = {"_static", "_sources", "_images", "_downloads", "reports"}
MATH_TIMEOUT_MS = 20_000
WIDGET_TIMEOUT_MS = 20_000

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(reason: str) -> None:
    """Skip locally, fail in CI: CI must really run the browser checks."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true, so this is a failure, not a skip)")
    pytest.skip(reason)


def _pages() -> list[str]:
    if not HTML.is_dir():
        return []
    return sorted(
        p.relative_to(HTML).as_posix()
        for p in HTML.rglob("*.html")
        if not (set(p.relative_to(HTML).parts[:-1]) & NOT_PAGES)
    )


PAGES = _pages()
_NO_BUILD = f"{HTML.relative_to(ROOT)} has no pages: build the book first (make book-rendered)"


def _page_params():
    if PAGES:
        return PAGES
    return [pytest.param(None, id="no-build")]


# --------------------------------------------------------------------------
# Static check: no page of the book loads a script or stylesheet from a CDN.
# --------------------------------------------------------------------------

_TAG = re.compile(r"<(script|link)\b[^>]*>", re.I)
_ATTR = re.compile(r'\b(src|href)\s*=\s*["\']([^"\']+)["\']', re.I)
_REL = re.compile(r'\brel\s*=\s*["\']([^"\']+)["\']', re.I)
# <link rel=...> kinds that make the browser fetch something.
_FETCHING_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "shortcut", "manifest"}


@pytest.mark.parametrize("page", _page_params())
def test_no_external_scripts_or_styles(page):
    if page is None:
        _unavailable(_NO_BUILD)
    html = (HTML / page).read_text(encoding="utf-8", errors="replace")
    external = []
    for m in _TAG.finditer(html):
        tag = m.group(0)
        for kind, url in _ATTR.findall(tag):
            if m.group(1).lower() == "link":
                rel = _REL.search(tag)
                if not rel or not (set(rel.group(1).lower().split()) & _FETCHING_RELS):
                    continue
            if re.match(r"^(https?:)?//", url, re.I):
                external.append(tag)
    assert not external, f"{page} loads from outside the book:\n" + "\n".join(external)


# --------------------------------------------------------------------------
# Browser checks.
# --------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="module")
def server():
    if not PAGES:
        _unavailable(_NO_BUILD)
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found: run `make browser-deps` (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (it is in requirements.txt)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


# Runs in the page: every problem with math, as a list of strings.
_MATH_PROBLEMS_JS = r"""
() => {
  const problems = [];
  const delim = /\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{/;
  const math = Array.from(document.querySelectorAll('.math'));
  math.forEach((el, i) => {
    if (!el.querySelector('mjx-container')) {
      problems.push('untypeset .math #' + i + ': ' + el.textContent.trim().slice(0, 80));
      return;
    }
    const clone = el.cloneNode(true);
    clone.querySelectorAll('mjx-container').forEach(c => c.remove());
    const rest = clone.textContent;
    if (delim.test(rest)) problems.push('raw TeX beside typeset math: ' + rest.trim().slice(0, 80));
  });
  document.querySelectorAll('mjx-merror').forEach(e => {
    problems.push('MathJax error: ' + (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 120));
  });
  // TeX left in the prose (outside code, math and scripts).
  const main = document.querySelector('main, article, [role=main]') || document.body;
  const prose = main.cloneNode(true);
  prose.querySelectorAll('pre, code, script, style, textarea, .math, mjx-container, .highlight')
       .forEach(e => e.remove());
  const m = prose.textContent.match(/.{0,40}(\$\$|\\\(|\\\[|\\begin\{).{0,40}/s);
  if (m) problems.push('raw TeX in the text: ' + m[0].replace(/\s+/g, ' '));
  return problems;
}
"""

_MATH_DONE_JS = r"""
() => {
  const math = document.querySelectorAll('.math');
  if (math.length === 0) return true;
  return Array.from(math).every(el => el.querySelector('mjx-container'));
}
"""

_BROKEN_IMAGES_JS = r"""
() => Array.from(document.images)
  .filter(img => img.getAttribute('src') && img.complete && img.naturalWidth === 0)
  .map(img => img.getAttribute('src'))
"""

_IMAGES_DONE_JS = r"""
() => Array.from(document.images).every(img => img.complete)
"""

# Widget views (<script type=...widget-view+json>) the manager should have rendered.
_WIDGETS_JS = r"""
() => {
  const state = document.querySelectorAll('script[type="application/vnd.jupyter.widget-state+json"]').length;
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const rendered = document.querySelectorAll('.jupyter-widgets, .widget-inline-hbox, .widget-box, .jp-OutputArea, .lm-Widget').length;
  return {state, views, rendered};
}
"""

_WIDGETS_DONE_JS = r"""
() => {
  const views = Array.from(document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]'));
  return views.every(s => s.parentElement && s.parentElement.querySelector('.jupyter-widgets, .lm-Widget'));
}
"""


_REFRESH = re.compile(r'<meta[^>]+http-equiv\s*=\s*["\']refresh["\']', re.I)


def _shot_name(page: str) -> str:
    return page.replace("/", "__").removesuffix(".html") + ".png"


@pytest.mark.parametrize("page", _page_params())
def test_page_renders(page, server, browser):
    if page is None:
        _unavailable(_NO_BUILD)
    host = urlsplit(server).netloc
    problems: list[str] = []

    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")

    def route(r):
        parts = urlsplit(r.request.url)
        if parts.scheme in {"http", "https"} and parts.netloc != host:
            problems.append(f"request to an external host (blocked): {r.request.url}")
            r.abort()
        else:
            r.continue_()

    context.route("**/*", route)
    p = context.new_page()
    p.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    p.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
    p.on(
        "response",
        lambda r: r.status >= 400
        and urlsplit(r.url).netloc == host
        and problems.append(f"HTTP {r.status}: {r.url}"),
    )
    p.on(
        "requestfailed",
        lambda r: urlsplit(r.url).netloc == host
        and problems.append(f"request failed ({r.failure}): {r.url}"),
    )
    try:
        url = f"{server}/{page}"
        if _REFRESH.search((HTML / page).read_text(encoding="utf-8", errors="replace")):
            # A redirect page (e.g. index.html -> the root chapter): check where it lands.
            p.goto(url, wait_until="load")
            p.wait_for_url(lambda u: u != url, wait_until="load", timeout=10_000)
        else:
            p.goto(url, wait_until="load")
        # Lazy images: load them all now so a broken one is seen.
        p.evaluate("() => document.querySelectorAll('img[loading=lazy]').forEach(i => i.loading = 'eager')")

        for js, ms in ((_MATH_DONE_JS, MATH_TIMEOUT_MS), (_WIDGETS_DONE_JS, WIDGET_TIMEOUT_MS), (_IMAGES_DONE_JS, 10_000)):
            try:
                p.wait_for_function(js, timeout=ms)
            except Exception:  # the checks below say what is missing
                pass
        try:
            p.wait_for_load_state("networkidle", timeout=10_000)
        except Exception:
            pass

        problems += p.evaluate(_MATH_PROBLEMS_JS)
        problems += [f"broken image: {src}" for src in p.evaluate(_BROKEN_IMAGES_JS)]
        w = p.evaluate(_WIDGETS_JS)
        if w["state"] and w["views"] and not p.evaluate(_WIDGETS_DONE_JS):
            problems.append(
                f"saved widget state with {w['views']} view(s) but widgets did not render "
                f"({w['rendered']} widget elements found)"
            )

        SHOTS.mkdir(parents=True, exist_ok=True)
        p.screenshot(path=str(SHOTS / _shot_name(page)), full_page=True)
    finally:
        context.close()

    assert not problems, f"{page}:\n  " + "\n  ".join(problems)
