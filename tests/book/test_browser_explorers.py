"""Every explorer of the built HTML book responds to its controls, offline, with readable text.

An explorer (``tfx.book.explorer.Explorer``) is a ``<div class="tfx-explorer">`` that
vega-embed fills with an SVG chart and one HTML control per explorer control.
For each page of ``_build/html`` that holds one, served from localhost with every
other host blocked, this test

* waits for every explorer to draw (it fails if one never does: missing Vega
  scripts, a JavaScript error, a broken spec);
* fails if any text inside an explorer (chart or controls) renders below
  ``tfx.book.explorer.MIN_FONT_PX`` at the page's width (an SVG scaled down to fit the
  column shrinks its text too, so the scale is measured, not assumed), or if the
  chart is wider than the page's column;
* moves each control, from the default state, to another value and fails unless the
  chart changes; moving it back must give the default chart again;
* checks that the explorer opens on the state the chapter's prose asks for
  (``DEFAULTS``);
* saves screenshots of each explorer before and after each move to
  ``_build/screenshots/explorers/``;

and checks that no page of the book is larger than 5 MB.

Chromium, playwright and the build are found as in test_browser.py (skipped
locally when missing, a failure in CI).
"""
from __future__ import annotations

import re

import pytest

from test_browser import HTML, PAGES, SHOTS, _unavailable, browser, offline_page, server  # noqa: F401  (fixtures)
from tfx.book.explorer import MIN_FONT_PX

EXPLORER_PAGES = [p for p in PAGES if 'class="tfx-explorer"' in (HTML / p).read_text(encoding="utf-8", errors="replace")]
OUT = SHOTS / "explorers"
DRAW_TIMEOUT_MS = 30_000
CHANGE_TIMEOUT_MS = 10_000

# What the prose asks the reader to look at first: {page: {control label: value}} of its first explorer.
DEFAULTS = {
    "book/01-why-hard.html": {"placement": "post", "initialiser": "xavier"},
    "book/02-anatomy.html": {"placement": "post"},
    "book/05-not-vanishing.html": {"placement": "post"},
    "book/06-amplification.html": {"placement": "post"},
    "book/07-admin.html": {"placement": "admin"},
    "book/10-rezero-deepnorm.html": {"initialiser": "deepnorm"},
    "book/11-warmup-adam.html": {"optimiser": "Adam, lr 3e-3", "warmup (steps)": "warmup=0"},
    "book/12-depth-with-warmup.html": {"architecture": "Post-LN", "depth": "6 layers"},
}


pytestmark = pytest.mark.long_file  # a minute or more: collected first (pytest.ini)


def _params():
    if EXPLORER_PAGES:
        return EXPLORER_PAGES
    return [pytest.param(None, id="no-explorer")]


# Runs in the page, for one explorer element: its text smaller than `min` px, as strings.
_SMALL_TEXT_JS = r"""
([el, min]) => {
  const small = [];
  el.querySelectorAll('svg').forEach(svg => {
    const w = svg.width && svg.width.baseVal ? svg.width.baseVal.value : 0;
    const scale = w ? svg.getBoundingClientRect().width / w : 1;
    svg.querySelectorAll('text').forEach(t => {
      if (!t.textContent.trim()) return;
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < min) small.push(`${px.toFixed(1)} px (svg scale ${scale.toFixed(2)}): "${t.textContent.trim().slice(0, 40)}"`);
    });
  });
  const svg = el.querySelector('svg');
  if (svg && svg.getBoundingClientRect().width > el.clientWidth + 1)
    small.push(`the chart is ${svg.getBoundingClientRect().width.toFixed(0)} px wide, the column ${el.clientWidth} px: it does not fit the page`);
  el.querySelectorAll('.vega-bindings *').forEach(e => {
    const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) return;
    const px = parseFloat(getComputedStyle(e).fontSize);
    if (px < min) small.push(`${px.toFixed(1)} px control text: "${e.textContent.trim().slice(0, 40)}"`);
  });
  return small;
}
"""

# The controls of one explorer: [{name, kind, values, current}] (vega-embed's bindings).
_CONTROLS_JS = r"""
(el) => Array.from(el.querySelectorAll('.vega-bind')).map(b => {
  const name = (b.querySelector('.vega-bind-name') || {}).textContent || '';
  const sel = b.querySelector('select');
  if (sel) return {name: name.trim(), kind: 'select', values: Array.from(sel.options).map(o => o.value), current: sel.value};
  const radios = Array.from(b.querySelectorAll('input[type=radio]'));
  const on = radios.find(r => r.checked);
  return {name: name.trim(), kind: 'radio', values: radios.map(r => r.value), current: on ? on.value : null};
})
"""

# What the chart draws, as a string: its SVG elements sorted (Vega may reorder equal
# elements on a redraw) without ids (clip paths are renumbered) and without the
# aria-label descriptions (an axis may describe its domain differently after a round trip).
_SIGNATURE = r"""
(el) => {
  const s = el.querySelector('svg');
  if (!s) return '';
  return s.outerHTML.replace(/\s(id|clip-path|aria-label)="[^"]*"/g, '').split('<').sort().join('<');
}
"""
_SVG_JS = "(el) => (" + _SIGNATURE + ")(el)"


def _set(el, control: dict, value: str) -> None:
    bind = el.locator(".vega-bind").nth(control["index"])
    if control["kind"] == "select":
        bind.locator("select").select_option(value)
    else:
        bind.locator(f'input[type=radio][value="{value}"]').check()


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_")


@pytest.mark.parametrize("page", _params())
def test_explorers_respond(page, server, browser):  # noqa: F811
    if page is None:
        _unavailable("no page of _build/html holds an explorer (div.tfx-explorer): build the book first")
    context, p, problems = offline_page(browser, server)
    OUT.mkdir(parents=True, exist_ok=True)
    stem = _safe(page.removesuffix(".html"))
    try:
        p.goto(f"{server}/{page}", wait_until="load")
        n = p.locator("div.tfx-explorer").count()
        assert n, f"{page}: no div.tfx-explorer in the rendered page"
        try:
            p.wait_for_function(
                "() => Array.from(document.querySelectorAll('div.tfx-explorer')).every(e => e.dataset.ready && e.querySelector('svg'))",
                timeout=DRAW_TIMEOUT_MS)
        except Exception:
            pytest.fail(f"{page}: not every explorer drew within {DRAW_TIMEOUT_MS / 1000:.0f} s\n  " + "\n  ".join(problems))
        for k in range(n):
            el = p.locator("div.tfx-explorer").nth(k)
            el.scroll_into_view_if_needed()
            handle = el.element_handle()
            tag = f"{stem}__{k}"
            el.screenshot(path=str(OUT / f"{tag}__before.png"))
            problems += [f"explorer {k}: unreadable: {s}"
                         for s in p.evaluate(_SMALL_TEXT_JS, [handle, MIN_FONT_PX])]
            controls = p.evaluate(_CONTROLS_JS, handle)
            if not controls:
                problems.append(f"explorer {k}: no controls rendered")
            for i, c in enumerate(controls):
                c["index"] = i
            if k == 0 and page in DEFAULTS:
                shown = {c["name"]: c["current"] for c in controls}
                for name, want in DEFAULTS[page].items():
                    if shown.get(name) != want:
                        problems.append(f"explorer {k} opens with {name} = {shown.get(name)!r}; the prose asks for {want!r}")
            default_svg = p.evaluate(_SVG_JS, handle)
            for c in controls:
                other = next((v for v in c["values"] if v != c["current"]), None)
                if other is None:
                    continue
                _set(el, c, other)
                try:
                    p.wait_for_function(f"([el, before]) => ({_SIGNATURE})(el) !== before",
                                        arg=[handle, default_svg], timeout=CHANGE_TIMEOUT_MS)
                except Exception:
                    problems.append(f"explorer {k}: moving {c['name']!r} from {c['current']!r} to {other!r} did not change the figure")
                el.screenshot(path=str(OUT / f"{tag}__{_safe(c['name'])}={_safe(other)}.png"))
                problems += [f"explorer {k} ({c['name']} = {other}): unreadable: {s}"
                             for s in p.evaluate(_SMALL_TEXT_JS, [handle, MIN_FONT_PX])]
                _set(el, c, c["current"])
                try:
                    p.wait_for_function(f"([el, want]) => ({_SIGNATURE})(el) === want",
                                        arg=[handle, default_svg], timeout=CHANGE_TIMEOUT_MS)
                except Exception:
                    problems.append(f"explorer {k}: moving {c['name']!r} back to {c['current']!r} did not restore the default figure")
    finally:
        context.close()
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


MAX_PAGE_BYTES = 5_000_000  # explorers embed every state: keep each page of the book under 5 MB


def test_pages_stay_small():
    if not PAGES:
        _unavailable("_build/html has no pages: build the book first (make book-rendered)")
    sizes = {p: (HTML / p).stat().st_size for p in PAGES}
    big = {p: f"{s / 1e6:.1f} MB" for p, s in sizes.items() if s > MAX_PAGE_BYTES}
    assert not big, f"pages over {MAX_PAGE_BYTES / 1e6:.0f} MB: {big}"
