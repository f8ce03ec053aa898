"""Sphinx extension: keep the book's HTML self-contained and its JavaScript clean.

* Removes duplicate inline/identical ``<script>`` entries. sphinx-thebe (which
  Jupyter Book 1 always loads) registers its inline ``const THEBE_JS_URL = ...``
  twice, and the second copy throws "Identifier 'THEBE_JS_URL' has already been
  declared" on every page.
* On a page that holds an explorer (``tfx.explorer.Explorer``: a
  ``<div class="tfx-explorer">``), adds the vendored Vega, Vega-Lite and
  vega-embed (book/_vendor/vega, served from _static) before RequireJS, so their
  UMD bundles define globals rather than anonymous AMD modules.
* When thebe is off (``launch_buttons.thebe: false``) drops sphinx-thebe's
  scripts altogether, so no page mentions its CDN (unpkg) at all.

Loaded through ``sphinx.local_extensions`` in ``_config.yml``.
"""

from __future__ import annotations


def _thebe_enabled(app) -> bool:
    opts = getattr(app.config, "html_theme_options", None) or {}
    return bool((opts.get("launch_buttons") or {}).get("thebe"))


def _clean_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    drop_thebe = not _thebe_enabled(app)
    seen = set()
    kept = []
    for js in scripts:
        filename = getattr(js, "filename", js)
        attrs = getattr(js, "attributes", {}) or {}
        body = attrs.get("body")
        if drop_thebe and (
            (filename and str(filename).endswith("sphinx-thebe.js"))
            or (body and "THEBE_JS_URL" in body)
        ):
            continue
        key = (str(filename), body)
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept


# Loaded in this order (vega-lite needs vega; vega-embed needs both), before
# RequireJS (myst-nb adds it at the default priority 500).
VEGA_JS = ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js")


def _add_vega(app, pagename, templatename, context, doctree):
    if 'class="tfx-explorer"' in (context.get("body") or ""):
        for k, js in enumerate(VEGA_JS):
            app.add_js_file(js, priority=300 + k)


def setup(app):
    app.connect("html-page-context", _add_vega)
    # Late priority: run after extensions that add per-page scripts (myst-nb).
    app.connect("html-page-context", _clean_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
