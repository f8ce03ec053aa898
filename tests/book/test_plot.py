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
