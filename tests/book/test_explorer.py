"""tfx.book.explorer: one declaration, a live widget and a Vega-Lite chart holding every state."""
import json
import re

import numpy as np
import pytest

from tfx.book.explorer import Explorer, Panel


def _compute(placement, depth):
    x = np.arange(1, depth + 1)
    slope = {"post": 1.0, "pre": 0.5}[placement]
    return [Panel(title="line", x="layer", y="y", lines={f"{placement}-LN": (x, slope * x)}, note=f"{placement} {depth}"),
            Panel(title="heat", heatmap=np.tril(np.ones((depth, depth))), vmin=0, vmax=1)]


@pytest.fixture
def ex():
    return Explorer({"placement": ["post", "pre"], "depth": [2, 3, 5]}, _compute, default={"depth": 3}, title="t")


def test_states_and_default(ex):
    assert ex.states()[0] == {"placement": "post", "depth": 2} and len(ex.states()) == 6
    assert ex.default == {"placement": "post", "depth": 3}


@pytest.mark.parametrize("kw, field", [
    (dict(controls={}), "controls"),
    (dict(controls={"depth": []}), "controls['depth']"),
    (dict(controls={"depth": [1, 2]}, default={"depth": 4}), "default['depth']"),
    (dict(controls={"depth": [1, 2]}, default={"width": 4}), "default['width']"),
])
def test_bad_declarations_name_the_field(kw, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        Explorer(compute=_compute, **kw)


def test_compute_must_return_panels():
    e = Explorer({"a": [1]}, lambda a: "not panels")
    with pytest.raises(ValueError, match="list of Panel"):
        e.panels(a=1)


def test_spec_holds_every_state_indexed_like_states(ex):
    spec = ex.spec()
    rows = spec["datasets"]["tfx"]
    for s, state in enumerate(ex.states()):
        line = [r for r in rows if r["s"] == s and r["p"] == 0 and r["m"] == "l"]
        slope = {"post": 1.0, "pre": 0.5}[state["placement"]]
        assert [r["y"] for r in line] == pytest.approx(list(slope * np.arange(1, state["depth"] + 1)))
        heat = [r for r in rows if r["s"] == s and r["p"] == 1 and r["m"] == "h"]
        assert len(heat) == state["depth"] ** 2
    # The parameter that picks the state is the mixed-radix index of the controls, in states() order.
    expr = next(p for p in spec["params"] if p["name"] == "tfx_state")["expr"]
    assert expr == 'indexof(["post", "pre"], c_placement) * 3 + indexof([2, 3, 5], c_depth) * 1'
    binds = {p["name"]: p for p in spec["params"] if "bind" in p}
    assert binds["c_depth"]["value"] == 3 and binds["c_depth"]["bind"]["options"] == [2, 3, 5]
    notes = spec["concat"][0]["title"]["subtitle"]["expr"]
    assert json.loads(notes.split("[tfx_state]")[0]) == [[f"{s['placement']} {s['depth']}"] for s in ex.states()]


def test_html_embeds_the_spec_safely():
    e = Explorer({"a": ["x</script>y"]}, lambda a: [Panel(note=a)])
    html = e.html()
    assert html.count("</script>") == 2  # the spec's own "</script>" is escaped
    spec = json.loads(re.search(r'type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1))
    assert spec["params"][0]["value"] == "x</script>y"


def test_live_widget_redraws_on_a_change(ex):
    import matplotlib

    matplotlib.use("Agg")
    box = ex.widget()
    placement = box.children[0]
    assert placement.value == "post"
    placement.value = "pre"  # computes (or reads) the new state and redraws
    assert ("pre", 3) in ex._cache
    bundle = ex._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert {"application/vnd.jupyter.widget-view+json", "text/html"} <= set(data)


def test_init_diagnostics_explorer():
    """Chapter 10's explorer over a grid of tfx.theory.scaling.init_diagnostics."""
    import tfx
    from tfx.book import widgets
    from tfx.book.plot import LABELS
    from tfx.theory import scaling

    task = tfx.synthetic("reverse", length=8)
    sizes = dict(d_model=32, n_heads=4, d_ffn=64)
    grid = scaling.init_diagnostics_grid(("post", "deepnorm"), (1, 2), task, task.batch(0, 8), seeds=2, **sizes)
    ex = widgets.init_diagnostics_explorer(grid, tfx.get_profile("quick"))
    assert ex.controls == {"init": ["xavier", "deepnorm"], "depth": [1, 2]}  # initialisers, on their schemes
    assert ex.default == {"init": "deepnorm", "depth": 2}
    beta, grads, change = ex.compute(init="deepnorm", depth=2)
    assert np.array_equal(beta.heatmap, grid["deepnorm", 2][0].beta, equal_nan=True)
    assert set(change.lines) == {LABELS["post"], LABELS["deepnorm"]}  # 'pre' is not in this grid
    assert change.styles[LABELS["deepnorm"]] == "bold"
    _, _, xavier = ex.compute(init="xavier", depth=1)
    assert xavier.styles[LABELS["post"]] == "bold"  # Xavier is shown on Post-LN


@pytest.mark.parametrize("kind", ["chance", "floor", "learned", "target", "guide"])
def test_a_level_looks_in_an_explorer_as_on_the_figures(kind):
    """Panel.level draws a level in plot.LEVELS' colour, with the explorer style of its line
    style (chance dotted, the floor dashed, learned dash-dotted, a guide faint), in the spec
    too: its rows carry that style's index, which picks the dash pattern the HTML draws."""
    from tfx.book.explorer import LEVEL_STYLES, STYLES
    from tfx.book.plot import LEVELS

    p = Panel(lines={"seed 0": ([1, 2], [3.0, 1.0])})
    p.level(kind, 1, 2, 0.5)
    label = LEVELS[kind]["label"] or kind
    assert p.lines[label] == ([1, 2], [0.5, 0.5]) and p.colors[label] == LEVELS[kind]["color"]
    assert p.styles[label] == LEVEL_STYLES[LEVELS[kind]["ls"]] and "seed 0" not in p.styles
    rows = Explorer({"a": [1]}, lambda a: [p]).spec()["datasets"]["tfx"]
    drawn = {r.get("w", 0) for r in rows if r["g"] == 1}
    assert drawn == {STYLES.index(p.styles[label])}


def test_the_styles_differ_in_the_html_and_the_live_view():
    """Every style draws its own line: a dash pattern, opacity and width of its own in the
    spec, and dotted and dash-dotted lines in matplotlib's live view."""
    import matplotlib.pyplot as plt

    from tfx.book.explorer import STYLES, _draw_panel

    p = Panel(lines={s: ([0, 1], [k, k]) for k, s in enumerate(STYLES)}, styles={s: s for s in STYLES})
    spec = json.dumps(Explorer({"a": [1]}, lambda a: [p]).spec())
    looks = re.search(r'\{"calculate": "(\[\[.*?\]\])\[datum\.w \|\| 0\]", "as": "dash"\}', spec)
    dashes = json.loads(looks.group(1).replace('\\"', '"'))
    assert len(dashes) == len(STYLES) and dashes[STYLES.index("dotted")] != dashes[STYLES.index("dashed")]
    fig, ax = plt.subplots()
    _draw_panel(ax, p)
    ls = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
    assert (ls["dotted"], ls["dashdot"], ls["dashed"], ls["solid"]) == (":", "-.", "--", "-")
    plt.close(fig)


def test_an_unknown_level_names_the_allowed_ones():
    with pytest.raises(ValueError, match="kind='ceiling'.*chance, floor"):
        Panel().level("ceiling", 0, 1, 1.0)
