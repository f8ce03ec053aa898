"""Explorers: a figure the reader changes with a few controls, live in Jupyter *and* in the HTML book.

Declare one with its controls (each a small list of values) and a function that
computes the figure of one state as plain data::

    def compute(placement, depth):
        g = measure(placement, depth)                    # numbers, not a plot
        return [Panel(title="gradient per layer", x="layer", y="‖∂L/∂W‖",
                      bars={placement: (range(1, depth + 1), g)}, note=f"{depth} layers")]

    Explorer({"placement": ["post", "pre"], "depth": [2, 6, 12]}, compute,
             default={"depth": 6}, title="Gradients at initialisation", P=P)

Displayed (the last expression of a cell), it is

* under a kernel (Jupyter, Colab): ipywidgets controls over a matplotlib figure,
  redrawn on every change (``widget()``);
* in the HTML book: a Vega-Lite chart holding *every* state of the control grid,
  with the controls bound to Vega-Lite parameters (``html()``), so it responds with
  no kernel. The Vega scripts are vendored (book/_vendor/vega) and added by
  book/_ext/tfx_offline.py to the pages that hold an explorer; myst-nb is told to
  prefer this ``text/html`` over the widget (``nb_mime_priority_overrides``).

So ``compute`` runs once for every state when the explorer is displayed: keep the
grid small (tens of states) and each state cheap, or read recorded runs (a
training explorer takes the records of ``tfx.runs.sweep.run_grid``). A state the
library refuses can return ``[Panel(note="...the ValueError...")]``.
"""
from __future__ import annotations

import html as _html
import itertools
import json
import math
import uuid
from dataclasses import dataclass, field

import numpy as np

# Vega-Lite text sizes (px): nothing in an explorer is drawn below MIN_FONT_PX.
MIN_FONT_PX = 11
_FONT = {"axis": 12, "title": 13, "note": 12, "legend": 12}
# Each line style of an explorer as the HTML draws it: (Vega-Lite dash pattern, opacity, stroke
# width). A data row carries its style's index in STYLES.
LINE_LOOKS = {"solid": ([1, 0], 1.0, 1.8), "dashed": ([5, 4], 1.0, 1.8), "faint": ([1, 0], 0.3, 1.5),
              "bold": ([1, 0], 1.0, 3.2), "dotted": ([2, 3], 1.0, 1.8), "dashdot": ([6, 3, 2, 3], 1.0, 1.8)}
STYLES = tuple(LINE_LOOKS)
# matplotlib's line style of a level (tfx.book.plot.LEVELS) as an explorer's style: a level looks
# the same in an explorer as on the figures (chance dotted, the floor dashed, learned dash-dotted)
LEVEL_STYLES = {":": "dotted", "--": "dashed", "-.": "dashdot", "-": "faint"}


@dataclass
class Panel:
    """One plot of an explorer's figure, as plain numbers.

    ``lines``/``points``/``bars``: {label: (xs, ys)}; bars are grouped side by side
    per x. ``heatmap``: a 2-D array (row i, column j; NaN cells are left blank) with
    colour range ``vmin``..``vmax``. ``styles``: {label: one of :data:`STYLES`} (default
    "solid"); :meth:`level` draws a level in the figures' look.
    ``colors``: {label: "#rrggbb"} (default: :func:`tfx.book.plot.label_color`, the colour
    the figures give the label, e.g. "post-LN", else a palette). ``note``: text under the
    title that may differ between states (a status, a fitted slope, a refusal; "\n"
    starts a new line; keep lines under ~45 characters).
    ``fixed_y``: in the HTML the y axis spans this panel's values in every state, so a
    move of a control shows against a fixed axis (False: each state its own range)."""

    title: str = ""
    x: str = ""
    y: str = ""
    lines: dict = field(default_factory=dict)
    points: dict = field(default_factory=dict)
    bars: dict = field(default_factory=dict)
    heatmap: object = None
    xlog: bool = False
    ylog: bool = False
    note: str = ""
    styles: dict = field(default_factory=dict)
    colors: dict = field(default_factory=dict)
    vmin: float | None = None
    vmax: float | None = None
    fixed_y: bool = True

    def level(self, kind: str, x0: float, x1: float, y: float) -> None:
        """A horizontal line at ``y`` from ``x0`` to ``x1``, named, coloured and styled as
        :data:`tfx.book.plot.LEVELS` draws the level ``kind`` on every figure."""
        from .plot import LEVELS

        if kind not in LEVELS:
            raise ValueError(f"kind={kind!r}: a level is one of {', '.join(LEVELS)}")
        look = LEVELS[kind]
        label = look["label"] or kind
        self.lines[label] = ([x0, x1], [y, y])
        self.styles[label], self.colors[label] = LEVEL_STYLES[look["ls"]], look["color"]

    def series(self):
        """(kind, label, xs, ys) of every line, point set and bar set."""
        for kind, group in (("line", self.lines), ("point", self.points), ("bar", self.bars)):
            for label, (xs, ys) in group.items():
                yield kind, str(label), np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)


def _color(panel: Panel, label: str, k: int) -> str:
    from .plot import UNNAMED_SERIES_COLORS, label_color

    if label in panel.colors:
        return panel.colors[label]
    return label_color(label, UNNAMED_SERIES_COLORS[k % len(UNNAMED_SERIES_COLORS)])


def _num(v: float):
    """A float for JSON: 4 significant digits (the figure needs no more), None for NaN/inf."""
    v = float(v)
    return None if not math.isfinite(v) else float(f"{v:.4g}")


class Explorer:
    """A figure over a grid of control values; see the module docstring.

    controls: {name: [values]} (each a small list; order = the order shown).
    compute:  ``compute(**state) -> list[Panel]`` (the same number of panels in every state).
    default:  the state shown first ({name: value}; a missing name takes its first value).
    labels:   {name: text shown beside the control} (default: the name).
    columns:  panels per row in the HTML (the book's column is ~690 px wide at 1280 px:
              2 panels of ``panel_width`` 230 px fit with their axes and stay readable).
    P:        the profile, stamped under the figure ("profile: book · device: cpu")."""

    def __init__(self, controls: dict, compute, default: dict | None = None, title: str = "",
                 labels: dict | None = None, columns: int = 2, P=None, panel_width: int = 230,
                 panel_height: int = 170):
        if not controls:
            raise ValueError("controls: give at least one control, e.g. {'placement': ['post', 'pre']}")
        for name, values in controls.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise ValueError(f"controls[{name!r}]: a non-empty list of values, got {values!r}")
        default = dict(default or {})
        for name, value in default.items():
            if name not in controls:
                raise ValueError(f"default[{name!r}]: not a control; controls are {', '.join(controls)}")
            if value not in controls[name]:
                raise ValueError(f"default[{name!r}] = {value!r} is not one of {list(controls[name])}")
        self.controls = {k: list(v) for k, v in controls.items()}
        self.default = {k: default.get(k, v[0]) for k, v in self.controls.items()}
        self.compute, self.title, self.P = compute, title, P
        self.labels = {k: (labels or {}).get(k, k) for k in self.controls}
        self.columns, self.panel_width, self.panel_height = columns, panel_width, panel_height
        self._cache: dict = {}

    # ---------------------------------------------------------------- states
    def states(self) -> list[dict]:
        """Every state of the control grid, in a fixed order (the HTML indexes them so)."""
        names = list(self.controls)
        return [dict(zip(names, combo)) for combo in itertools.product(*self.controls.values())]

    def panels(self, **state) -> list[Panel]:
        """The figure of one state (computed once, then cached)."""
        key = tuple(state[k] for k in self.controls)
        if key not in self._cache:
            panels = self.compute(**state)
            if not panels or not all(isinstance(p, Panel) for p in panels):
                raise ValueError(f"compute({state}) must return a non-empty list of Panel, got {panels!r}")
            self._cache[key] = list(panels)
        return self._cache[key]

    # ---------------------------------------------------------------- live: ipywidgets + matplotlib
    def draw(self, **state):
        """The matplotlib figure of one state (what the live widget shows)."""
        from .plot import figure
        from ..runs.profiles import get_profile

        panels = self.panels(**state)
        n = max(len(panels), 1)
        cols = min(n, max(self.columns, 1))
        rows = math.ceil(n / cols)
        fig, axes = figure(self.P or get_profile(), ncols=cols, nrows=rows, width=4.6 * cols + 0.4,
                           height=3.3 * rows + 0.4, squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_axis_off()
        for ax, p in zip(axes.flat, panels):
            _draw_panel(ax, p)
        if self.title:
            fig.suptitle(self.title, fontsize=11)
        return fig

    def widget(self):
        """ipywidgets controls over an Output that redraws on every change."""
        import ipywidgets as W
        import matplotlib.pyplot as plt

        out = W.Output()
        boxes = {}
        for name, values in self.controls.items():
            kind = W.ToggleButtons if len(values) <= 4 and all(len(str(v)) <= 10 for v in values) else W.Dropdown
            boxes[name] = kind(options=[(str(v), v) for v in values], value=self.default[name],
                               description=self.labels[name], style={"description_width": "initial"})

        def redraw(*_):
            out.clear_output(wait=True)
            with out:
                self.draw(**{k: b.value for k, b in boxes.items()})
                plt.show()

        for b in boxes.values():
            b.observe(redraw, names="value")
        redraw()
        return W.VBox([*boxes.values(), out])

    # ---------------------------------------------------------------- HTML: Vega-Lite, every state
    def spec(self) -> dict:
        """The Vega-Lite spec with every state precomputed and the controls bound to parameters."""
        from .plot import GREYS

        states = self.states()
        figures = [self.panels(**s) for s in states]
        n_panels = max(len(f) for f in figures)
        rows, panels = [], []
        for k in range(n_panels):
            labels = []  # every series label this panel has in any state, in first-seen order
            for s, fig in enumerate(figures):
                if k >= len(fig):
                    continue
                p = fig[k]
                for kind, label, xs, ys in p.series():
                    if label not in labels:
                        labels.append(label)
                    g = labels.index(label)
                    style = STYLES.index(p.styles.get(label, "solid"))  # per state: "bold" follows the choice
                    for x, y in zip(xs, ys):
                        if (p.xlog and not x > 0) or (p.ylog and not y > 0) or not (math.isfinite(x) and math.isfinite(y)):
                            continue  # a log axis cannot show 0; a NaN is a gap
                        row = {"s": s, "p": k, "m": kind[0], "g": g, "x": _num(x), "y": _num(y)}
                        if style:
                            row["w"] = style
                        rows.append(row)
                if p.heatmap is not None:
                    m = np.asarray(p.heatmap, dtype=float)
                    for (i, j), v in np.ndenumerate(m):
                        if math.isfinite(v):
                            rows.append({"s": s, "p": k, "m": "h", "x": j, "y": i, "v": _num(v)})
            template = next(f[k] for f in figures if k < len(f))
            panels.append(self._panel_spec(k, template, labels, [f[k].note if k < len(f) else "" for f in figures],
                                           [f[k] for f in figures if k < len(f)],
                                           [f[k].title if k < len(f) else "" for f in figures]))
        params = [self._param(name) for name in self.controls]
        params.append({"name": "tfx_state", "expr": self._state_expr()})
        footer = str(self.P) if self.P is not None else ""
        return _drop_none({
            "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
            "background": GREYS["paper"],  # readable in the theme's dark mode too
            "padding": 6,
            "title": ({"text": self.title, "subtitle": footer, "fontSize": _FONT["title"] + 1,
                       "subtitleFontSize": MIN_FONT_PX, "anchor": "start", "limit": 2 * self.panel_width + 150}
                      if self.title else None),
            "params": params,
            "datasets": {"tfx": rows},
            "concat": panels,
            "columns": self.columns,
            "spacing": 24,
            "resolve": {"scale": {c: "independent" for c in ("color", "strokeDash", "opacity", "strokeWidth")}},
            "config": {
                "font": "sans-serif",
                "axis": {"labelFontSize": _FONT["axis"], "titleFontSize": _FONT["axis"], "labelOverlap": True},
                "legend": {"labelFontSize": _FONT["legend"], "titleFontSize": _FONT["legend"], "orient": "bottom",
                           "direction": "vertical", "labelLimit": self.panel_width + 20, "rowPadding": 2,
                           "layout": {"bottom": {"anchor": "start", "direction": "vertical"}}},
                "title": {"fontSize": _FONT["title"], "subtitleFontSize": _FONT["note"], "anchor": "start",
                          "subtitleColor": GREYS["ink"], "limit": self.panel_width + 70},
                "view": {"stroke": None},
            },
        })

    def _param(self, name: str) -> dict:
        values = self.controls[name]
        plain = [v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else str(v) for v in values]
        kind = "radio" if len(values) <= 4 else "select"
        return {"name": _pname(name), "value": plain[values.index(self.default[name])],
                "bind": {"input": kind, "options": plain, "labels": [str(v) for v in values],
                         "name": self.labels[name] + " "}}

    def _state_expr(self) -> str:
        """The index of the current state in ``states()``: a mixed-radix number of the controls' indices."""
        terms, stride = [], 1
        for name in reversed(list(self.controls)):
            values = [v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else str(v)
                      for v in self.controls[name]]
            terms.append(f"indexof({json.dumps(values)}, {_pname(name)}) * {stride}")
            stride *= len(values)
        return " + ".join(reversed(terms))

    def _panel_spec(self, k: int, p: Panel, labels: list, notes: list, every: list, titles: list) -> dict:
        colors = [_color(p, lab, i) for i, lab in enumerate(labels)]
        for q in every:  # a colour given in any state wins
            for i, lab in enumerate(labels):
                if lab in q.colors:
                    colors[i] = q.colors[lab]
        label_expr = f"{json.dumps(labels)}[datum.g]"
        base_filter = f"datum.s == tfx_state && datum.p == {k}"
        series_enc = {
            "color": {"field": "series", "type": "nominal", "title": None,
                      "scale": {"domain": labels, "range": colors}},
        }
        x_q = {"field": "x", "type": "quantitative", "title": p.x, "scale": {"type": "log"} if p.xlog else {"zero": False}}
        xs = [x for q in every for _, _, xx, _ in q.series() for x in xx if math.isfinite(x)]
        if xs and not p.xlog and all(float(x).is_integer() for x in xs):
            x_q["axis"] = {"tickMinStep": 1, "format": "d"}  # layers, steps: no 1.5
        y_scale = {"type": "log"} if p.ylog else {"zero": False}
        ys = [y for q in every for _, _, _, yy in q.series() for y in yy
              if math.isfinite(y) and (y > 0 or not p.ylog)]
        if p.fixed_y and ys:
            y_scale["domain"] = [_num(min(ys)), _num(max(ys))]
        y_q = {"field": "y", "type": "quantitative", "title": p.y, "scale": y_scale}
        layers = []

        def layer(mark_code, mark, encoding, extra=()):
            # The legend of each mark lists only the series drawn with that mark.
            own = [lab for q in every for kind, lab, *_ in q.series() if kind[0] == mark_code]
            encoding["color"] = {**encoding["color"], "legend": {"values": list(dict.fromkeys(own))}}
            layers.append({"transform": [{"filter": f"{base_filter} && datum.m == '{mark_code}'"},
                                         {"calculate": label_expr, "as": "series"}, *extra],
                           "mark": mark, "encoding": encoding})

        has = {kind for q in every for kind, *_ in q.series()}
        if "line" in has:
            # Line styles (STYLES order) come per row, as plain values (no scale, no legend).
            style = {k: [look[i] for look in LINE_LOOKS.values()] for i, k in enumerate(("dash", "op", "sw"))}
            layer("l", {"type": "line"}, {
                "x": x_q, "y": y_q, **series_enc, "detail": {"field": "series"},
                "strokeDash": {"field": "dash", "type": "nominal", "scale": None},
                "opacity": {"field": "op", "type": "quantitative", "scale": None},
                "strokeWidth": {"field": "sw", "type": "quantitative", "scale": None},
                "order": {"field": "x", "type": "quantitative"},
                "tooltip": [{"field": "series"}, {"field": "x", "title": p.x}, {"field": "y", "title": p.y}]},
                extra=[{"calculate": f"{json.dumps(v)}[datum.w || 0]", "as": k} for k, v in style.items()])
        if "point" in has:
            layer("p", {"type": "point", "filled": True, "size": 50}, {
                "x": x_q, "y": y_q, **series_enc,
                "tooltip": [{"field": "series"}, {"field": "x", "title": p.x}, {"field": "y", "title": p.y}]})
        if "bar" in has:
            layer("b", {"type": "bar"}, {
                "x": {"field": "x", "type": "ordinal", "title": p.x, "axis": {"labelAngle": 0}},
                "xOffset": {"field": "series"},
                "y": {**y_q, "scale": {k: v for k, v in y_scale.items() if k != "zero"}},
                **series_enc,
                "tooltip": [{"field": "series"}, {"field": "x", "title": p.x}, {"field": "y", "title": p.y}]})
        if any(q.heatmap is not None for q in every):
            scale = {"scheme": "viridis"}
            if p.vmin is not None or p.vmax is not None:
                scale["domain"] = [p.vmin if p.vmin is not None else 0, p.vmax if p.vmax is not None else 1]
            layers.append({"transform": [{"filter": f"{base_filter} && datum.m == 'h'"}], "mark": "rect",
                           "encoding": {
                               "x": {"field": "x", "type": "ordinal", "title": p.x,
                                     "axis": {"labelAngle": 0, "labelOverlap": "greedy"}},
                               "y": {"field": "y", "type": "ordinal", "title": p.y, "axis": {"labelOverlap": "greedy"}},
                               "color": {"field": "v", "type": "quantitative", "title": None, "scale": scale,
                                         "legend": {"orient": "right", "direction": "vertical", "gradientLength": 120}},
                               "tooltip": [{"field": "y", "title": p.y}, {"field": "x", "title": p.x},
                                           {"field": "v", "title": "value"}]}})
        if not layers:  # a panel that only ever shows its note (a refused state)
            layers.append({"mark": {"type": "text"}, "encoding": {}})
        title = {"text": p.title or " "}
        if len(set(titles)) > 1:  # a title that changes with the state
            title["text"] = {"expr": f"{json.dumps([t or ' ' for t in titles])}[tfx_state]"}
        if any(notes):  # a note of several lines ("\n") is drawn as several lines
            title["subtitle"] = {"expr": f"{json.dumps([n.split(chr(10)) for n in notes])}[tfx_state]"}
        return {"title": title, "width": self.panel_width, "height": self.panel_height,
                "data": {"name": "tfx"}, "layer": layers,
                "resolve": {"scale": {"color": "independent"}}}

    def html(self) -> str:
        """A <div> and the script that draws ``spec()`` into it with vega-embed (from the book's _static)."""
        uid = "tfx-explorer-" + uuid.uuid4().hex[:10]
        spec = json.dumps(self.spec(), separators=(",", ":")).replace("</", "<\\/")
        return (
            _CSS +
            f'<div class="tfx-explorer" id="{uid}" data-title="{_html.escape(self.title)}"></div>\n'
            f'<script type="application/json" id="{uid}-spec">{spec}</script>\n'
            "<script>(function () {\n"
            f'  var el = document.getElementById("{uid}");\n'
            "  function draw() {\n"
            "    if (!window.vegaEmbed) { el.textContent = 'This explorer needs the book\\'s Vega scripts "
            "(open it in the HTML book, or run the notebook).'; return; }\n"
            f'    var spec = JSON.parse(document.getElementById("{uid}-spec").textContent);\n'
            "    vegaEmbed(el, spec, {actions: false, renderer: 'svg'})\n"
            "      .then(function (r) { el.setAttribute('data-ready', '1'); el.tfxView = r.view; })\n"
            "      .catch(function (e) { console.error('explorer: ' + e); });\n"
            "  }\n"
            "  if (window.vegaEmbed || document.readyState === 'complete') draw();\n"
            "  else window.addEventListener('load', draw);\n"
            "})();</script>"
        )

    # ---------------------------------------------------------------- display
    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget()._repr_mimebundle_(include=include, exclude=exclude)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/html"] = self.html()
        return bundle


# Controls on their own lines, labels aligned; a chart wider than the column scrolls
# rather than shrinking its text. (Repeated per explorer: identical rules, tiny.)
_CSS = ("<style>.tfx-explorer{overflow-x:auto;max-width:100%;margin:0.5em 0;background:#fff;color:#222}"
        ".tfx-explorer .vega-bind{margin:0.15em 0}"
        ".tfx-explorer .vega-bind-name{display:inline-block;min-width:11em;font-weight:600}"
        ".tfx-explorer .vega-bind-radio label{margin:0 0.9em 0 0.25em}"
        ".tfx-explorer select{font-size:inherit}</style>\n")


def _pname(name: str) -> str:
    """A Vega parameter name for a control (a prefix keeps it clear of Vega's own names)."""
    return "c_" + "".join(ch if ch.isalnum() else "_" for ch in name)


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _draw_panel(ax, p: Panel):
    """One Panel on a matplotlib Axes (the live view)."""
    from .plot import heatmap

    if p.heatmap is not None:
        heatmap(ax, p.heatmap, title="", xlabel=p.x, ylabel=p.y, vmin=p.vmin, vmax=p.vmax)
    bar_groups = [(lab, xs, ys) for kind, lab, xs, ys in p.series() if kind == "bar"]
    width = 0.8 / max(len(bar_groups), 1)
    for k, (kind, label, xs, ys) in enumerate(p.series()):
        c = _color(p, label, k)
        style = p.styles.get(label, "solid")
        if kind == "line":
            ax.plot(xs, ys, color=c, label=label,
                    ls={name: ls for ls, name in LEVEL_STYLES.items()}.get(style, "-"),
                    lw=2.6 if style == "bold" else 1.5, alpha=0.4 if style == "faint" else 1)
        elif kind == "point":
            ax.plot(xs, ys, "o", color=c, label=label, ms=5)
    for k, (label, xs, ys) in enumerate(bar_groups):
        ax.bar(xs + (k - (len(bar_groups) - 1) / 2) * width, ys, width, color=_color(p, label, k), label=label)
    if p.xlog:
        ax.set_xscale("log")
    if p.ylog:
        ax.set_yscale("log")
    ax.set_xlabel(p.x)
    ax.set_ylabel(p.y)
    ax.set_title(p.title + (f"\n{p.note}" if p.note else ""), fontsize=10)
    if any(True for _ in p.series()):
        ax.legend(fontsize=8)
