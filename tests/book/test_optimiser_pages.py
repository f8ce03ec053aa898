"""tfx.book.optimiser_pages: the tables and figures of chapters 18 to 21."""
import numpy as np

from tfx.book import optimiser_pages as pages
from tfx.theory import optimiser as O
from tfx.theory.optimiser import CoordinateCheck


def test_the_grid_and_noise_tables_render_from_their_rows():
    rows = O.quadratic_grid([0.95], [1e-8, 1e-3], steps=600)
    assert "| 0.95 | 1e-03 |" in pages.grid_table(rows)
    noisy = O.noise_grid([0.0, 1e-3], seeds=[0, 1], betas=(0.9, 0.95), steps=600)
    assert "| 1e-03 | 0 of 2 | none |" in pages.noise_table(noisy, 38.0)


def test_schedules_figure_draws_each_schedule_at_each_length_from_the_records():
    """SC-1's figure, from the recorded quick sweep: one panel per run length, one median
    curve per schedule over the peak rates, in the schedule's colour."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from tfx.book import evidence
    from tfx.runs.profiles import get_profile

    recs = evidence.records("schedules", "quick")
    fig = pages.schedules_figure(get_profile("quick", check_task=False), recs)
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["400 steps", "1,200 steps"]
    for ax in axes:
        medians = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
        for name, c in pages.SCHEDULE_COLORS.items():
            assert to_hex(medians[name].get_color()) == c
            assert len(medians[name].get_xdata()) == len({r.point["lr"] for r in recs})
    plt.close(fig)


def test_the_grid_and_slope_tables_render_exactly():
    rows = [dict(beta2=0.95, eps=1e-8, t0=120, predicted=480, onset=488, agree=True),
            dict(beta2=0.999, eps=1e-3, t0=None, predicted=None, onset=None, agree=True)]
    assert pages.grid_table(rows) == (
        "| β₂ | ε | decay starts | predicted | onset seen | agree |\n|---|---|---|---|---|---|\n"
        "| 0.95 | 1e-08 | 120 | 480 | 488 | yes |\n| 0.999 | 1e-03 | none | none | none | yes |")
    slopes = np.array([[1.0, 0.6], [1.1, 0.5], [0.9, 0.55]])
    steep = CoordinateCheck([32, 64], ["a", "logits"], np.ones((3, 2, 2)), slopes)
    assert pages.slope_table({"standard": steep}) == (
        "| quantity | standard |\n|---|---|\n| a | +1.00 [+0.75, +1.25] |\n| logits | +0.55 [+0.43, +0.67] |")
