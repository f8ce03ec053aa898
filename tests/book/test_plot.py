"""The figure stamp names the profile, the device and the task the figure shows."""
import math

import matplotlib
import pytest

matplotlib.use("Agg")

from tfx.book import plot  # noqa: E402
from tfx.runs.profiles import get_profile  # noqa: E402


def _stamp_text(fig) -> str:
    return " ".join(t.get_text() for t in fig.texts)


def test_figure_stamps_the_profile_and_its_task():
    P = get_profile("quick", check_task=False)
    fig, _ = plot.figure(P)
    assert _stamp_text(fig) == str(P) and f"task: {P.task}" in _stamp_text(fig)


def test_figure_task_overrides_the_stamped_task():
    """A recorded language-model sweep drawn in the quick profile says it is the LM's task,
    not the profile's usual one (without ``task`` the stamp would say 'reverse')."""
    P = get_profile("quick", check_task=False)
    fig, _ = plot.figure(P, task="libreoffice-en")
    text = _stamp_text(fig)
    assert "task: libreoffice-en" in text and f"task: {P.task}" not in text
    assert f"profile: {P.name}" in text and f"device: {P.device}" in text


def test_every_scheme_has_one_label_and_chapter_10s_a_colour():
    """The book names the schemes of tfx.nn.config.SCHEMES (the same keys, one label each)."""
    from tfx.book import widgets
    from tfx.nn.config import SCHEMES

    assert plot.LABELS.keys() == SCHEMES.keys()
    assert len(set(plot.LABELS.values())) == len(plot.LABELS)
    assert all(s in plot.COLORS for s in widgets.INIT_DIAGNOSTICS.values())


def test_chapter_10s_explorer_offers_initialisers_each_on_its_scheme():
    """The explorer's choices are initialisers (a subset of tfx.nn.config.INITS), each shown on
    a scheme whose init it is."""
    from tfx.book import widgets
    from tfx.nn.config import INITS, SCHEMES, ModelConfig

    assert set(widgets.INIT_DIAGNOSTICS) <= set(INITS)
    for init, scheme in widgets.INIT_DIAGNOSTICS.items():
        assert ModelConfig(**SCHEMES[scheme]).init == init


def test_effects_plot_draws_every_seed_the_interval_and_the_verdict_colour():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tfx.runs import effects

    up = effects.paired({s: 1.0 + 0.1 * s for s in range(5)}, dict.fromkeys(range(5), 0.0), "higher")
    flat = effects.paired({s: (-1) ** s * 0.3 for s in range(5)}, dict.fromkeys(range(5), 0.0), "higher")
    fig, ax = plt.subplots()
    plot.effects_plot(ax, [("warmup helps", up), ("no effect", flat)], title="t")
    lines = ax.get_lines()
    dots = [ln for ln in lines if ln.get_marker() == "o"]
    assert sorted(len(ln.get_xdata()) for ln in dots) == [5, 5]  # every seed
    bars = [ln for ln in lines if ln.get_linestyle() == "-" and len(ln.get_xdata()) == 2]
    assert sorted(tuple(ln.get_xdata()) for ln in bars) == sorted([(up.low, up.high), (flat.low, flat.high)])
    colours = {ln.get_color() for ln in dots}
    assert colours == {"#1b9e77", "#777777"}  # reproduces, not resolved
    assert [t.get_text() for t in ax.get_yticklabels()] == ["no effect", "warmup helps"]
    plt.close(fig)


# ------------------------------------------------------------------ the one colour registry
# The colours a module of tfx/book still spells itself: each gives a thing a colour other than
# the registry's for the same thing (a TODO(colours) comment marks the spot), kept so that the
# committed figures stay as they are until the chapters are executed again.
COLOUR_CONFLICTS = {
}


def _colour_literals(path) -> set:
    """The #rrggbb colours spelled in the string literals of a Python file (comments skipped)."""
    import io
    import re
    import tokenize

    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return {c.lower() for t in tokens if t.type == tokenize.STRING
            for c in re.findall(r"#[0-9a-fA-F]{6}\b", t.string)}


def test_colours_are_spelled_only_in_the_registry():
    """Every colour of tfx/book lives in plot.py (COLORS and the maps beside it); another
    module spells one only where it is a listed conflict, and the list is exact (a conflict
    resolved leaves it)."""
    from pathlib import Path

    found = {p.name: _colour_literals(p) for p in sorted(Path(plot.__file__).parent.glob("*.py"))
             if p.name != "plot.py"}
    assert {name: cs for name, cs in found.items() if cs} == COLOUR_CONFLICTS


def test_every_scheme_has_a_colour_and_schemes_drawn_together_differ():
    assert set(plot.LABELS) <= set(plot.COLORS)
    together = {  # schemes that share a figure
        "the schemes": ("post", "pre", "admin", "rezero", "deepnorm", "t-fixup", "lipschitz", "none"),
        "where the norm goes": ("post", "pre", "peri-ln", "output-norm", "sub-ln", "ln-scaling", "dyt"),
        "depth scalings": ("pre", "deepnorm", "admin", "t-fixup", "ln-scaling", "depth-mup"),
        "schedules": ("constant", "cosine", "wsd-linear", "wsd-sqrt", "linear-decay"),
    }
    for name, keys in together.items():
        assert len({plot.COLORS[k] for k in keys}) == len(keys), name
    maps = {"TFIXUP_COLORS": plot.TFIXUP_COLORS, "LIPSCHITZ_COLORS": plot.LIPSCHITZ_COLORS,
            "WARM_BASELINE_COLORS": plot.WARM_BASELINE_COLORS,
            "the depth sweeps' labels": [plot.ARCH_COLORS[k] for k in (
                "Post-LN", "Pre-LN", "Admin", "Admin (profiling-free)", "T-Fixup (no LN)",
                "Post-LN enc / Pre-LN dec", "Lipschitz init (Post-LN)")],
            "the placements' labels": [plot.ARCH_COLORS[k] for k in (
                "Post-LN", "Pre-LN", "Peri-LN", "output norm", "Pre-LN, 1/√ℓ", "Sub-LN")],
            "FIX_COLORS": plot.FIX_COLORS, "OUTCOME_COLORS": plot.OUTCOME_COLORS,
            "VERDICT_COLORS": plot.VERDICT_COLORS, "SUBLAYER_COLORS": plot.SUBLAYER_COLORS,
            "STACK_COLORS": plot.STACK_COLORS, "SEED_COLORS": plot.SEED_COLORS,
            "WARMUP_COLORS": plot.WARMUP_COLORS}
    for name, m in maps.items():
        colours = list(m.values()) if isinstance(m, dict) else list(m)
        assert len(set(colours)) == len(colours), name
    norms_drawn = (("LayerNorm", "RMSNorm", "DyT", "DyT, α = 0.1", "DyT, α = 0.02"),  # lr curves
                   ("LayerNorm", "RMSNorm", "DyT, α = 0.5", "DyT, α = 2"))  # gain_figure
    for keys in norms_drawn:
        assert len({plot.NORM_COLORS[k] for k in keys}) == len(keys)


def test_warmups_take_the_ends_of_the_warmup_scale():
    """plot.warmup_colors: no warmup always the scale's first colour, the longest its last, in
    every chapter and explorer (training_pages and widgets both call it)."""
    from tfx.book.plot import WARMUP_COLORS, warmup_colors
    for n in range(1, 5):
        got = warmup_colors(n)
        assert len(got) == n and len(set(got)) == n and got[0] == WARMUP_COLORS[0]
        assert n == 1 or got[-1] == WARMUP_COLORS[-1]
    with pytest.raises(ValueError, match="n=5"):
        warmup_colors(5)


def test_no_chapter_spells_a_colour():
    """The chapters' code cells take their colours from the registry too (a cell that spells
    '#rrggbb' would give a thing a colour no other page knows)."""
    import json
    import re
    from pathlib import Path

    book = Path(__file__).resolve().parents[2] / "book"
    spelled = {}
    for nb in sorted(book.glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        found = {c for cell in cells if cell["cell_type"] == "code"
                 for c in re.findall(r"#[0-9a-fA-F]{6}\b", "".join(cell["source"]))}
        if found:
            spelled[nb.name] = sorted(found)
    assert not spelled, f"colours spelled in chapters (use tfx.book.plot's registry): {spelled}"


def _effect(diffs):
    from tfx.runs import effects
    return effects.paired(dict(enumerate(diffs)), {s: 0.0 for s in range(len(diffs))}, "lower", "a", "b")


def test_effects_figure_wraps_its_labels_and_gives_an_extreme_row_its_own_panel():
    """One forest plot for the whole book: labels wrapped at ``wrap``; a row far wider than the
    others (split_rows) on a panel of its own, similar rows on one."""
    P = get_profile("quick", check_task=False)
    near = [(f"r{k}", _effect([-1.0 - 0.1 * k, -1.1, -0.9])) for k in range(3)]
    far = ("far", _effect([-80.0, -60.0, -70.0]))
    wide, narrow = plot.split_rows(near + [far])
    assert [label for label, _ in wide] == ["far"] and len(narrow) == 3
    assert plot.split_rows(near) == ([], near)
    assert len(plot.effects_figure(P, near + [far]).axes) == 2
    fig = plot.effects_figure(P, [("a long label " * 6, near[0][1]), *near[1:]], title="t", wrap=20)
    (ax,) = fig.axes
    assert len(ax.get_yticklabels()) == 3
    assert max(len(line) for line in ax.get_yticklabels()[2].get_text().splitlines()) <= 20
    assert "task: libreoffice-en" in _stamp_text(plot.effects_figure(P, near, task="libreoffice-en"))


# ------------------------------------------------------------------ lr_figure (chapters 8-10)
def test_lr_figure_never_goes_below_zero_marks_divergence_in_the_legend_and_draws_no_text():
    from tfx.runs import results
    from tfx.runs.experiment import Experiment

    recs, exp = results.load("t-fixup", "book"), Experiment.load("t-fixup")
    if not recs:
        pytest.skip("no recorded t-fixup sweep in the book profile")
    P = get_profile("quick", check_task=False)
    schemes = [name for name, _ in exp.grid("book")["scheme"]]
    blown = ["Xavier, no LN", "T-Fixup, embeddings only"]
    fig = plot.lr_figure(P, recs, "scheme", {"bounded": [s for s in schemes if s not in blown],
                                             "blown": blown}, plot.TFIXUP_COLORS)
    left, right = fig.axes
    assert left.get_yscale() == "linear" and left.get_ylim()[0] == 0
    assert right.get_yscale() == "log" and right.get_ylim()[0] > 0  # losses far above chance
    for ax in (left, right):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(lab.startswith("× diverged") for lab in labels)  # every panel has a diverged run
        assert not ax.texts  # no strings drawn on the axes
    finals = [x for r in recs for x in [r.final_loss] if math.isfinite(x)]
    assert max(finals) > plot.LOG_ABOVE * recs[0].history.chance_loss


def test_lr_figure_is_stamped_with_its_records_task_not_the_profiles():
    from tfx.runs import results

    P = get_profile("quick", check_task=False)
    recs = results.load("warm-baselines", "quick")
    if not recs:
        pytest.skip("no recorded warm-baselines sweep in the quick profile")
    assert recs[0].task != P.task
    schemes = list(dict.fromkeys(r.point["scheme"] for r in recs))
    fig = plot.lr_figure(P, recs, "scheme", {"all": schemes}, plot.WARM_BASELINE_COLORS)
    texts = [t.get_text() for t in fig.texts]
    assert any(t.endswith(f"task: {recs[0].task}") for t in texts), texts


def _history(**kw):
    from types import SimpleNamespace

    base = dict(chance_loss=2.0, floor_loss=0.5, step=[1, 2, 3], loss=[2.0, 1.5, 1.0],
                eval_step=[2, 3], eval_loss=[1.8, 1.2])
    return SimpleNamespace(**(base | kw))


def _hlines(ax) -> dict:
    """{legend label or None: (y, linestyle, colour)} of the horizontal lines on ``ax``."""
    from matplotlib.colors import to_hex

    out = {}
    for line in ax.get_lines():
        ys = list(line.get_ydata())
        if len(ys) == 2 and ys[0] == ys[1] and list(line.get_xdata()) == [0, 1]:
            label = line.get_label()
            out[None if label.startswith("_") else label] = (ys[0], line.get_linestyle(),
                                                             to_hex(line.get_color()))
    return out


def test_loss_levels_draw_chance_floor_and_the_learned_level_each_in_its_one_look():
    """Chance dotted, the floor dashed, the learned level dash-dotted in the outcome's green:
    the same on every figure (LEVELS), labelled unless ``label=False``; no floor line where
    the task has none, no learned line unless asked."""
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3)
    plot.loss_levels(a, _history(), learned=1.2)
    assert _hlines(a) == {"chance": (2.0, ":", plot.GREYS["level"]),
                          "floor": (0.5, "--", plot.GREYS["level"]),
                          "learned at or below": (1.2, "-.", plot.OUTCOME_COLORS["learned"])}
    plot.loss_levels(b, _history(floor_loss=0.0))
    assert set(_hlines(b)) == {"chance"}
    plot.loss_levels(c, _history(), label=False)
    assert len(c.get_lines()) == 2 and c.get_legend_handles_labels() == ([], [])
    plt.close(fig)


def test_level_takes_another_label_and_refuses_an_unknown_kind():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plot.level(ax, "learned", 1.0, "learned line")
    plot.level(ax, "target", 0.3)
    assert set(_hlines(ax)) == {"learned line", "target"}
    with pytest.raises(ValueError, match="kind='ceiling'.*chance"):
        plot.level(ax, "ceiling", 1.0)
    plt.close(fig)


def test_seed_curves_draws_every_run_and_labels_only_the_first():
    import matplotlib.pyplot as plt
    from types import SimpleNamespace

    runs = [SimpleNamespace(history=_history(eval_loss=[1.8 + s, 1.2 + s])) for s in range(3)]
    fig, (a, b) = plt.subplots(1, 2)
    plot.seed_curves(a, runs, plot.color("post"), "Post-LN", ls="--")
    assert [list(line.get_ydata()) for line in a.get_lines()] == [[1.8 + s, 1.2 + s] for s in range(3)]
    assert a.get_legend_handles_labels()[1] == ["Post-LN"]
    assert {line.get_linestyle() for line in a.get_lines()} == {"--"}
    plot.seed_curves(b, runs, plot.color("pre"), curve="loss")  # the training loss instead
    assert [list(line.get_xdata()) for line in b.get_lines()] == [[1, 2, 3]] * 3
    assert b.get_legend_handles_labels() == ([], [])
    plt.close(fig)


def test_no_module_gives_a_colour_by_name_or_grey_level():
    """A colour argument in tfx/book is a registry entry, never a literal such as "k",
    "grey" or "0.6" (only "none", for an open marker), nor matplotlib's cycle (f"C{k}", whose
    red is Xu et al.'s bound's), so that the greys of chance, a floor or a guide look the same
    on every figure."""
    import ast
    from pathlib import Path

    keywords = {"color", "c", "mfc", "mec", "fc", "ec", "facecolor", "edgecolor",
                "markerfacecolor", "markeredgecolor"}
    found = []
    for path in sorted(Path(plot.__file__).parent.glob("*.py")):
        if path.name == "plot.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg in keywords:
                values = ([node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp)
                          else [node.value])
                found += [f"{path.name}:{v.lineno} {node.arg}={v.value!r}" for v in values
                          if isinstance(v, ast.Constant) and isinstance(v.value, str)
                          and v.value != "none"]
                found += [f"{path.name}:{v.lineno} {node.arg}=f'C…'" for v in values  # the cycle
                          if isinstance(v, ast.JoinedStr) and isinstance(v.values[0], ast.Constant)
                          and str(v.values[0].value).startswith("C")]
    assert not found, found


def test_a_label_has_one_colour_in_figures_and_explorers():
    """label_color: a sweep's label takes its own colour, else its first word's scheme, else
    the default; an explorer's series takes the same (before, "Pre-LN, 1/√ℓ" was Pre-LN's blue
    in the explorer and ln-scaling's in the figures)."""
    from tfx.book.explorer import Panel, _color

    assert plot.label_color("Pre-LN, 1/√ℓ") == plot.COLORS["ln-scaling"] != plot.COLORS["pre"]
    assert plot.label_color("Admin (profiling-free)") == plot.COLORS["admin-profiling-free"]
    assert plot.label_color("Post-LN, lr 1e-3") == plot.COLORS["post"]
    assert plot.label_color("seed 0") == plot.GREYS["ink"] and plot.label_color("seed 0", None) is None
    for label in plot.ARCH_COLORS:
        assert _color(Panel(title=""), label, 0) == plot.label_color(label)
    assert _color(Panel(title=""), "seed 0", 1) == plot.UNNAMED_SERIES_COLORS[1]


def test_the_notation_page_describes_the_levels_as_they_are_drawn():
    """The reading key on the notation page names each level's line style as plot.LEVELS
    draws it (and the explorers, through Panel.level), so a change of style fails here until
    the page says so."""
    from pathlib import Path

    from tfx.book.plot import LEVELS

    words = {":": "dotted", "--": "dashed", "-.": "dash-dotted"}
    page = " ".join((Path(__file__).resolve().parents[2] / "book" / "notation.md").read_text().split())
    for kind, phrase in (("chance", "the chance loss is **{}**"), ("floor", "floor **{}**"),
                         ("learned", "the learned line, $C - (C - F)/4$, **{}** in green")):
        assert phrase.format(words[LEVELS[kind]["ls"]]) in page, kind
