"""Packaging that tells the truth: the torch floor is what the code needs, every third-party
module the scripts and the library import is declared, the Pythons the README names are
the ones the pins and requires-python allow, and the venv uses the book toolchain's pins."""
from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# What the code uses that a torch release added, and the release (torch's release notes).
TORCH_NEEDS = {
    "torch.nn.utils.get_total_norm": (2, 6),
    "nn.RMSNorm": (2, 4),
    '"fused": True': (2, 4),  # fused Adam/AdamW on a CPU
}


def _version(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:2])


def _requirement(name: str, lines) -> str | None:
    for line in lines:
        m = re.match(rf"\s*{re.escape(name)}\s*([<>=!~].*?)\s*(?:;.*)?$", line.split("#")[0], re.I)
        if m:
            return m.group(1)
    return None


def test_the_torch_floor_is_what_the_code_needs():
    floor = _requirement("torch", PYPROJECT["project"]["dependencies"])
    assert floor and floor.startswith(">="), floor
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tfx").rglob("*.py"))
    for api, since in TORCH_NEEDS.items():
        assert api in code, f"{api} is no longer used: drop it from TORCH_NEEDS"
        assert _version(floor) >= since, f"the code uses {api} (torch {since}), pyproject says torch{floor}"
    assert _version(floor) == max(TORCH_NEEDS.values()), "the floor is higher than anything the code needs"


def _third_party_imports(paths) -> set:
    stdlib = set(sys.stdlib_module_names) | {"tfx", "__future__"}
    found = set()
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            found |= {n.split(".")[0] for n in names}
    return {m for m in found - stdlib if not (ROOT / "scripts" / f"{m}.py").exists()}


def _declared() -> set:
    names = [re.split(r"[<>=!~;\[ ]", r)[0] for r in PYPROJECT["project"]["dependencies"]]
    names += [re.split(r"[<>=!~;\[ ]", r)[0] for extra in PYPROJECT["project"]["optional-dependencies"].values()
              for r in extra]
    for pins in ("requirements.txt", "constraints.txt"):
        names += [line.split("==")[0].strip() for line in (ROOT / pins).read_text().splitlines()
                  if line.strip() and not line.startswith("#")]
    return {n.lower().replace("_", "-") for n in names}


@pytest.mark.parametrize("where", ["scripts", "tfx", "tools"])
def test_every_third_party_import_is_declared(where):
    """A module a script, the library or a tool imports comes from a distribution that
    requirements.txt, constraints.txt or pyproject.toml names (PyYAML for yaml, …)."""
    dists = metadata.packages_distributions()
    declared = _declared()
    missing = {}
    for module in sorted(_third_party_imports((ROOT / where).rglob("*.py"))):
        providers = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not providers & declared:
            missing[module] = sorted(providers)
    assert not missing, f"{where}/ imports modules no requirement declares: {missing}"


def test_the_venv_installs_the_no_deps_test_pins_without_their_dependencies():
    """requirements-nodeps.txt (mup, for tests/nn/test_mup_weight_decay.py) is installed with
    --no-deps: mup declares torchvision, which would replace the pinned CPU torch."""
    makefile = (ROOT / "Makefile").read_text()
    assert "--no-deps -r requirements-nodeps.txt" in makefile
    assert re.search(r"^\$\(STAMP\):.*requirements-nodeps\.txt", makefile, re.M), "a changed pin must rebuild the venv"
    pins = [line.split("#")[0].strip() for line in (ROOT / "requirements-nodeps.txt").read_text().splitlines()
            if line.split("#")[0].strip()]
    assert pins == ["mup==1.0.0"]


def test_the_pythons_the_readme_names_are_the_ones_that_work():
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"
    assert "Python 3.11 to 3.13" in readme and "Python ≥ 3.10" in readme  # the pinned env; the library
    assert "(3, 11) <= sys.version_info[:2] <= (3, 13)" in makefile  # make refuses others, saying why
    assert "Python 3.11-3.13" in (ROOT / "requirements.txt").read_text()


def test_the_venv_installs_the_book_toolchain_pins():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt -c constraints.txt" in makefile
    assert re.search(r"^\$\(STAMP\):.*constraints\.txt", makefile, re.M), "a changed pin must rebuild the venv"
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    names = {line.split("==")[0].lower() for line in pins}
    assert {"sphinx", "myst-nb", "myst-parser", "sphinx-book-theme", "docutils", "pydata-sphinx-theme"} <= names
    assert all("==" in line for line in pins)
    # every pin installs on the oldest Python the README names (soupsieve 4.1 needs 3.11.5: left to pip)
    from packaging.specifiers import SpecifierSet

    for line in pins:
        name = line.split("==")[0]
        try:
            needs = metadata.metadata(name).get("Requires-Python")
        except metadata.PackageNotFoundError:
            continue
        assert not needs or SpecifierSet(needs).contains("3.11.0"), f"{line} needs Python {needs}"
    req = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
           if "==" in line and not line.startswith("#")}
    assert not names & req, f"pinned twice: {names & req}"


def test_the_page_linter_is_a_tool_not_part_of_the_wheel():
    """tools/pagecheck.py (the page measures the tests read) stays out of the distribution:
    the wheel carries the tfx packages only, the sdist's MANIFEST.in names no tools/, and
    tfx/book/page.py keeps what a chapter calls when it runs (reproduce), not the linter."""
    assert PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"] == ["tfx*"]
    assert not (ROOT / "tools" / "__init__.py").exists()  # not a package find_packages could take
    assert "tools" not in (ROOT / "MANIFEST.in").read_text()
    page = (ROOT / "tfx" / "book" / "page.py").read_text()
    tool = (ROOT / "tools" / "pagecheck.py").read_text()
    for name in ("visible_code_lines", "dense_paragraphs", "raw_markdown_tables", "open_text",
                 "toc_notebooks"):
        assert f"def {name}(" in tool and f"def {name}(" not in page
    assert "def reproduce(" in page
