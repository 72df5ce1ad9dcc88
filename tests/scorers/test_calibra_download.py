"""``make calibration-data`` (scripts/fetch_calibration_data.py), offline: downloads from
``file://`` copies, keeps only files with the pinned SHA-256, and the calibration tests
find what it wrote."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
from pathlib import Path

import pytest

from .calibra import REPO, calibra_folder, require_calibra


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location(
        "fetch_calibration_data", REPO / "scripts" / "fetch_calibration_data.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mirror(root: Path, files: dict[str, bytes]) -> str:
    """A folder laid out like the repository; its file:// URL."""
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root.as_uri() + "/"


def _table(files: dict[str, bytes]) -> dict[str, tuple[str, str]]:
    return {Path(name).name: (name, hashlib.sha256(data).hexdigest()) for name, data in files.items()}


GOOD = {"ResultsCalibra/results_official.csv": b"metric,I03.bmp\npsnr,21.1\n",
        "ResultsCalibra/ref_dir/I03.bmp": b"BM" + bytes(range(256)) * 4}


def test_downloads_checked_files_once(script, tmp_path: Path) -> None:
    base = _mirror(tmp_path / "mirror", GOOD)
    dest = tmp_path / "dest"
    table = _table(GOOD)
    assert script.fetch(base, dest, table, log=lambda _: None) == ["results_official.csv", "I03.bmp"]
    assert (dest / "I03.bmp").read_bytes() == GOOD["ResultsCalibra/ref_dir/I03.bmp"]
    assert not list(dest.glob("*.part"))
    # in place with the right hash: nothing is fetched (the URL is not even tried)
    assert script.fetch((tmp_path / "nowhere").as_uri(), dest, table, log=lambda _: None) == []


def test_a_file_with_a_wrong_hash_is_deleted(script, tmp_path: Path) -> None:
    table = _table(GOOD)
    bad = dict(GOOD, **{"ResultsCalibra/ref_dir/I03.bmp": b"<html>a proxy's login page</html>"})
    base = _mirror(tmp_path / "mirror", bad)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "I03.bmp").write_bytes(b"a stale, wrong copy")
    with pytest.raises(script.FetchError, match="SHA-256 .* expected .*the file was deleted"):
        script.fetch(base, dest, table, log=lambda _: None)
    assert sorted(p.name for p in dest.iterdir()) == ["results_official.csv"]  # the good one stays


def test_unreachable_file_is_an_error(script, tmp_path: Path) -> None:
    csv = "ResultsCalibra/results_official.csv"
    base = _mirror(tmp_path / "mirror", {csv: GOOD[csv]})  # I03.bmp is missing
    with pytest.raises(script.FetchError, match="could not download .*I03.bmp"):
        script.fetch(base, tmp_path / "dest", _table(GOOD), log=lambda _: None)
    assert not (tmp_path / "dest" / "I03.bmp").exists()
    assert not list((tmp_path / "dest").glob("*.part"))


def test_command_line_says_what_to_do(script, tmp_path: Path, capsys) -> None:
    base = _mirror(tmp_path / "mirror", {path: b"not the data" for path, _ in script.FILES.values()})
    dest = tmp_path / "dest"
    assert script.main(["--dest", str(dest), "--base-url", base]) == 1
    err = capsys.readouterr().err
    assert "SHA-256" in err and "make calibration-data" in err and "IEQA_CALIBRA_DIR" in err
    assert not [p for p in dest.rglob("*") if p.is_file()]


def test_pinned_hashes_are_those_of_the_shared_copy(script, tmp_path: Path, monkeypatch) -> None:
    """The real table, against the copy CI has (../shared/data/pyiqa_calibra, the files of
    IQA-PyTorch at the pinned commit): the script accepts all of them, and the calibration
    tests find the folder it wrote."""
    shared = require_calibra()
    commit = shared / "SOURCE_COMMIT.txt"
    if commit.is_file():
        assert script.COMMIT in commit.read_text()
    mirror = tmp_path / "mirror"
    for name, (remote, _) in script.FILES.items():
        (mirror / remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared / name, mirror / remote)
    dest = tmp_path / "dest"
    assert script.main(["--dest", str(dest), "--base-url", mirror.as_uri()]) == 0
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == sorted(script.FILES)
    monkeypatch.setenv("IEQA_CALIBRA_DIR", str(dest))
    assert calibra_folder() == dest


def test_missing_data_skips_naming_the_make_target(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("IEQA_CALIBRA_DIR", str(tmp_path))
    with pytest.raises(pytest.skip.Exception, match="make calibration-data"):
        require_calibra()


def test_downloaded_data_is_git_ignored() -> None:
    ignored = {line.strip() for line in (REPO / ".gitignore").read_text().splitlines()}
    assert ".data/" in ignored
