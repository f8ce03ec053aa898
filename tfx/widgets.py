"""The explorers: ipywidgets that let a reader change a setting and see the result.

Each explorer is one function returning a widget to display; it computes its
default state when built, so the HTML book (which saves widget state) shows that
state, and Jupyter/Colab recompute live. Heavy work runs on a button press.
"""
from __future__ import annotations

import ipywidgets as W
import matplotlib.pyplot as plt
from IPython.display import display


def _panel(controls: list, run, button: str | None = None, live: bool = False):
    """Controls above an Output area. ``run(**values)`` draws into the output; it
    runs once now (the default state), then on every button press (or every change
    when ``live``)."""
    out = W.Output()
    values = lambda: {c.description_key: c.value for c in controls}  # noqa: E731

    def redraw(*_):
        out.clear_output(wait=True)
        with out:
            run(**values())
            plt.show()

    box = list(controls)
    if button:
        b = W.Button(description=button, button_style="primary")
        b.on_click(redraw)
        box.append(b)
    if live:
        for c in controls:
            c.observe(redraw, names="value")
    redraw()
    return W.VBox([W.HBox(box[:3]), W.HBox(box[3:]), out]) if len(box) > 3 else W.VBox([W.HBox(box), out])


def control(kind, key: str, description: str, **kw):
    """A widget whose value is passed to ``run`` as keyword ``key``."""
    w = kind(description=description, style={"description_width": "initial"}, **kw)
    w.description_key = key
    return w


# ============================================================== training explorer (anatomy chapter)


# ============================================================== LayerNorm / gradients-at-init explorers


# ============================================================== amplification / Admin explorers
