"""Sealed batches (tfx.runs.results.seal): an open batch of records compressed once, read back
exactly, never written again."""
import json
import lzma
from pathlib import Path

import pytest

from tfx.runs import results

ROOT = Path(__file__).resolve().parents[2]


def _lines(n=3):
    """``n`` real record lines (a small committed quick-profile sweep)."""
    path = results.files_for(ROOT / "results", "warmup", "quick")[0]
    got = [line for _, line in results.lines(path)][:n]
    assert len(got) == n
    return got


def _open_batch(folder, lines, name="warmup.quick.jsonl"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(lines))
    return path


def test_a_sealed_batch_reads_back_byte_for_byte_and_the_open_batch_is_gone(tmp_path):
    lines = _lines()
    path = _open_batch(tmp_path / "r", lines)
    before = [r.to_dict() for r in results.read(path)]
    sealed = results.seal(path)
    assert sealed.name.startswith("warmup.quick.") and sealed.name.endswith(results.SEALED)
    assert not path.exists()
    assert lzma.decompress(sealed.read_bytes()) == "".join(lines).encode()
    assert results.files_for(tmp_path / "r", "warmup", "quick") == [sealed]
    assert [r.to_dict() for r in results.load("warmup", "quick", tmp_path / "r")] == before
    # the name is a function of the content: the same records seal to the same file name
    again = results.seal(_open_batch(tmp_path / "other", lines))
    assert again.name == sealed.name and again.read_bytes() == sealed.read_bytes()
    # different records, different name
    assert results.seal(_open_batch(tmp_path / "third", lines[:2])).name != sealed.name


def test_appends_after_a_seal_start_a_new_open_batch_and_both_are_read(tmp_path):
    lines = _lines()
    path = _open_batch(tmp_path, lines[:2])
    sealed = results.seal(path)
    results.append(path, json.loads(lines[2]))
    assert results.files_for(tmp_path, "warmup", "quick") == sorted([sealed, path])
    assert len(results.load("warmup", "quick", tmp_path)) == 3
    with pytest.raises(ValueError, match="a sealed batch is never written again"):
        results.append(sealed, json.loads(lines[2]))
    with pytest.raises(ValueError, match="a sealed batch is never rewritten"):
        results.rewrite(sealed, lambda d: d)
    assert results.rejudge_file(sealed) == 0


def test_a_torn_open_batch_is_left_open_with_a_warning(tmp_path):
    lines = _lines()
    path = _open_batch(tmp_path, lines[:2] + [lines[2][:200]])
    with pytest.warns(UserWarning, match="not whole JSON"):
        assert results.seal(path) is None
    assert path.exists() and not list(tmp_path.glob(f"*{results.SEALED}"))
    assert results.seal(tmp_path / "absent.quick.jsonl") is None


def test_a_damaged_sealed_file_is_named(tmp_path):
    sealed = results.seal(_open_batch(tmp_path, _lines()))
    data = sealed.read_bytes()
    sealed.write_bytes(data[: len(data) // 2])
    with pytest.raises(results.RecordError, match=f"{sealed.name}: a damaged compressed results file"):
        results.load("warmup", "quick", tmp_path)


def test_the_command_seals_and_names_a_bad_argument(tmp_path, capsys):
    path = _open_batch(tmp_path, _lines(2))
    assert results.main(["seal", str(path)]) == 0
    assert results.SEALED in capsys.readouterr().out and not path.exists()
    assert results.main(["seal", str(tmp_path / "nope.jsonl")]) == 1
    assert "not an open batch" in capsys.readouterr().out


def _git(*args):
    import subprocess

    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout


def test_every_committed_sealed_file_is_its_name_and_a_converted_file_equals_what_it_replaced():
    """A sealed file's name carries the hash of what it holds (a changed byte shows); one that
    replaced an open batch in the same commit (the conversion of the old JSON-lines files, or a
    burst that appended to an open batch and sealed it) starts with exactly that batch's bytes:
    every record it held is the same, and records were only appended after it."""
    import hashlib
    import subprocess

    sealed = sorted((ROOT / "results").glob(f"*{results.SEALED}"))
    if not sealed:
        pytest.skip("no sealed file committed yet")
    try:
        _git("rev-parse", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for f in sealed:
        data = lzma.decompress(f.read_bytes())
        assert f.name.endswith(f"-{hashlib.sha256(data).hexdigest()[:8]}{results.SEALED}"), f.name
        added = _git("log", "--diff-filter=A", "--format=%H", "--", f"results/{f.name}").split()
        if not added:
            continue  # not committed yet
        opened = f.name.split(".")[0] + "." + f.name.split(".")[1] + ".jsonl"
        if f"results/{opened}" in _git("show", "--name-only", "--diff-filter=D", "--format=", added[-1].decode()).decode():
            before = _git("show", f"{added[-1].decode()}^:results/{opened}")
            assert before and data.startswith(before), f.name
