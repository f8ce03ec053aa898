"""The build step pyproject.toml cannot say: a wheel carries the experiment files and the
recorded results (compressed, checksummed) in tfx/shipped/, so every chapter runs from a
pip install with no checkout beside it (tfx/runs/shipped.py). Everything else is in
pyproject.toml."""
import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class build_py_with_shipped(build_py):
    def run(self):
        super().run()
        # tfx/runs/shipped.py uses the standard library only: load it without importing tfx (torch)
        spec = importlib.util.spec_from_file_location("tfx_shipped", ROOT / "tfx" / "runs" / "shipped.py")
        shipped = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(shipped)
        shipped.ship(ROOT, Path(self.build_lib) / "tfx" / "shipped")


setup(cmdclass={"build_py": build_py_with_shipped})
