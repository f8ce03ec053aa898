"""The folded 'Reproduce this page' box: shown once, with what it promises."""
from types import SimpleNamespace

import IPython.display

from tfx.book import notebook, page


def test_reproduce_shows_the_box_once_and_returns_nothing(monkeypatch):
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    notebook._STARTED[:] = [0.0]
    # a returned object would be shown a second time by a last cell without ';'
    assert page.reproduce(SimpleNamespace(name="book"), experiments=("warmup",)) is None
    boxes = [o for o in shown if isinstance(o, IPython.display.HTML)]
    assert len(boxes) == 1 and "Reproduce this page" in boxes[0].data


def test_reproduce_html_names_commands_and_gpu_status():
    box = page.reproduce_html("book", 12.0, experiments=("no-such-sweep",), gpu=("no-such-sweep",))
    assert box.startswith("<details") and box.endswith("</details>")
    assert "python -m tfx.sweep experiments/no-such-sweep --profile book --jobs 2" in box
    assert "not recorded in this profile" in box and "not yet run on a GPU" in box
    assert "ran in 12 s" in box


def test_the_reproduce_box_is_styled_by_the_books_css():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[2] / "book" / "_static" / "tfx-book.css").read_text()
    assert "class='tfx-reproduce'" in page.reproduce_html("quick", 1.0)
    assert "details.tfx-reproduce {" in css
