"""Fill a folder with the wheels scripts/gpu_burst.sh installs on a bare GPU machine:

    python scripts/gpu_wheels.py .gpu-wheels          # make gpu-wheels
    python scripts/gpu_wheels.py .gpu-wheels --tfx    # and a wheel of this checkout

* every wheel of ``scripts/gpu_wheels.txt`` (what the sweep and the bench import beyond torch
  and numpy), downloaded for CPython 3.12 on manylinux x86-64 with ``pip download --no-deps``,
  exactly those versions and nothing else;
* with ``--tfx``, ``tfx_book-*.whl`` built from this checkout (no dependencies). Without it the
  script builds tfx-book from the carried tree itself, which keeps the carry small (the wheel
  holds the corpora, ~10 MiB, and a lent machine takes at most 64 MiB with the tree).

The folder is ignored by git (.gitignore); carry it beside the working tree. Older files in
it are removed first, so it holds one version of each.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "scripts" / "gpu_wheels.txt"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "manylinux_2_24_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64")


def wanted(path: Path = LIST) -> list[tuple[str, str]]:
    """(``name==version``, import name) for each line of ``path``; a bad line names itself."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or "==" not in parts[0]:
            raise ValueError(f"{path}:{n}: {line!r} must be 'distribution==version import-name'")
        out.append((parts[0], parts[1]))
    return out


def build_tfx_wheel(folder: Path) -> Path:
    """This checkout as a wheel (no dependencies) in ``folder``."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(folder),
                    str(ROOT)], check=True)
    wheels = sorted(folder.glob("tfx_book-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one tfx_book wheel in {folder}, found {[w.name for w in wheels]}")
    return wheels[0]


def download(folder: Path, requirements) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", "-d", str(folder)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + [r for r, _ in requirements], check=True)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    with_tfx = "--tfx" in args
    args = [a for a in args if a != "--tfx"]
    if len(args) != 1:
        print("usage: python scripts/gpu_wheels.py FOLDER [--tfx]", file=sys.stderr)
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.whl"):
        old.unlink()
    if with_tfx:
        print(f"built {build_tfx_wheel(folder).name}")
    download(folder, wanted())
    names = sorted(w.name for w in folder.glob("*.whl"))
    size = sum(w.stat().st_size for w in folder.glob("*.whl")) / 2**20
    print(f"{len(names)} wheels in {folder} ({size:.1f} MiB): carry it beside the working tree where the GPU "
          "machine lacks one of them (scripts/gpu_burst.sh says so)\n  " + "\n  ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
