"""The glued values of chapters' saved outputs, to show that a refactor changed no number.

    python tools/glue_snapshot.py book/07-admin.ipynb ... > before.json   # snapshot
    python tools/glue_snapshot.py --compare before.json after.json          # what differs
    python tools/glue_snapshot.py --code-lines book/*.ipynb                 # code cells' lines

A snapshot maps each notebook to its glue names and their text (``text/markdown`` where a
value is Markdown, else ``text/plain``). Figures are compared by name only: their pixels
change with the drawing library, their data do not.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def glued(path: Path) -> dict:
    nb = json.loads(Path(path).read_text())
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is None:
                continue
            # glue stores a value under 'application/papermill.record/<mime>' (display=False)
            # or under the plain mime type (display=True)
            data = {k.removeprefix("application/papermill.record/"): v for k, v in o.get("data", {}).items()}
            if any(k.startswith("image/") for k in data):
                out[name] = "<figure>"
            else:
                out[name] = data.get("text/markdown", data.get("text/plain", ""))
    return out


def code_lines(path: Path) -> int:
    nb = json.loads(Path(path).read_text())
    return sum(len("".join(c["source"]).splitlines()) for c in nb["cells"] if c["cell_type"] == "code")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--code-lines", action="store_true")
    a = ap.parse_args(argv)
    if a.compare:
        before, after = (json.loads(Path(p).read_text()) for p in a.compare)
        bad = 0
        for nb in sorted(set(before) | set(after)):
            b, f = before.get(nb, {}), after.get(nb, {})
            for key in sorted(set(b) | set(f)):
                if b.get(key) != f.get(key):
                    bad += 1
                    print(f"{nb} {key}:\n  before: {str(b.get(key))[:300]!r}\n  after:  {str(f.get(key))[:300]!r}")
        print(f"{bad} glued value(s) differ")
        return 1 if bad else 0
    if a.code_lines:
        total = 0
        for p in a.paths:
            n = code_lines(Path(p))
            total += n
            print(f"{n:6d}  {p}")
        print(f"{total:6d}  total")
        return 0
    json.dump({str(p): glued(Path(p)) for p in a.paths}, sys.stdout, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
