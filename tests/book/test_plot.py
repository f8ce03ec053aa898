"""The figure stamp names the profile, the device and the task the figure shows."""
import matplotlib

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
