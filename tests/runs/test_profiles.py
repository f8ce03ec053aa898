"""The full profile runs where the reader is: IWSLT'14 when it can be loaded, else the shipped
corpus, said plainly (a warning, and the profile line names the task actually used)."""
import importlib.util

import pytest

import tfx
import tfx.book.notebook
from tfx.runs import corpus, profiles

UNREACHABLE = "the Hugging Face hub is not reachable: ConnectError"


@pytest.fixture
def hub(monkeypatch):
    """Set what the IWSLT'14 check answers: a reason it cannot load, or None (it can)."""
    def set_answer(answer):
        monkeypatch.setattr(corpus, "iwslt14_unavailable", lambda timeout=5.0: answer)
        profiles.resolve_task.cache_clear()
    yield set_answer
    profiles.resolve_task.cache_clear()


def test_full_profile_falls_back_to_the_shipped_corpus_and_says_so(hub, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TFX_CACHE", str(tmp_path))  # the BPE of the corpus goes here
    hub(UNREACHABLE)
    with pytest.warns(UserWarning, match="IWSLT'14 cannot be loaded .the Hugging Face hub is not reachable.*"
                                         "shipped LibreOffice corpus 'libreoffice-de-en-large'"):
        P = tfx.book.notebook.setup("full")
    line = capsys.readouterr().out.strip()
    assert line == str(P) == (f"profile: full · device: {P.device} · "
                              "task: libreoffice-de-en-large (IWSLT'14 unavailable)")
    assert P.task == "libreoffice-de-en-large" and "not reachable" in P.task_note
    task = P.load_task()  # no crash, no download: the shipped corpus
    assert task.name == "libreoffice-de-en-large" and len(task) > 25_000


def test_full_profile_uses_iwslt_when_it_can_be_loaded(hub, recwarn):
    hub(None)
    P = tfx.get_profile("full")
    assert P.task == "iwslt14" and P.task_note == ""
    assert str(P).endswith("task: iwslt14")
    assert not [w for w in recwarn if "IWSLT" in str(w.message)]


def test_a_failing_iwslt_load_falls_back_with_a_warning(hub, monkeypatch, tmp_path):
    monkeypatch.setenv("TFX_CACHE", str(tmp_path))
    hub(None)  # the check said yes, then the download fails
    real = tfx.runs.data.load_task

    def load_task(name, seed=0, length=12):
        if name == "iwslt14":
            raise ConnectionError("connection reset")
        return real(name, seed=seed, length=length)

    monkeypatch.setattr(tfx.runs.data, "load_task", load_task)
    with pytest.warns(UserWarning, match="loading IWSLT'14 failed .ConnectionError: connection reset.*libreoffice"):
        task = profiles.load_task_or_fallback("iwslt14")
    assert task.name == "libreoffice-de-en-large"


def test_iwslt_check_names_the_missing_extras(monkeypatch):
    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == "huggingface_hub" else find(m, *a))
    assert corpus.iwslt14_unavailable() == "huggingface_hub not installed: pip install 'tfx-book[full]'"


def test_other_profiles_name_their_task_and_never_look_for_iwslt(hub, monkeypatch):
    def asked(timeout=5.0):
        raise AssertionError("quick and book never check the hub")

    hub(None)
    monkeypatch.setattr(corpus, "iwslt14_unavailable", asked)
    for name in ("quick", "book"):
        P = tfx.get_profile(name)
        assert P.task == "reverse" and str(P) == f"profile: {name} · device: {P.device} · task: reverse"


def test_the_profile_device_is_pick_devices_choice():
    """One place chooses the device (tfx.nn.optim.pick_device); a profile shows its choice."""
    from tfx.nn.optim import pick_device

    assert tfx.get_profile("quick").device == str(pick_device())
