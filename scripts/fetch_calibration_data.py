#!/usr/bin/env python
"""Download IQA-PyTorch's calibration data for the tests (``make calibration-data``).

``tests/scorers/test_fr_calibration.py`` and the NIQE/PIQE calibration tests of
``tests/scorers/test_nr.py`` compare ieqa's metrics with the official values that
IQA-PyTorch publishes in its ``ResultsCalibra`` folder: five TID2013 (reference,
distorted) pairs (``ref_dir/I03.bmp`` ..., ``dist_dir/I03.bmp`` ...) and
``results_official.csv``. CI finds them in ``../shared/data/pyiqa_calibra`` beside the
clone; anywhere else this script fetches them, at the commit pinned in :data:`COMMIT`, into
``.data/pyiqa_calibra`` of the repository (git-ignored), where the tests look next::

    python scripts/fetch_calibration_data.py                 # what make calibration-data runs
    python scripts/fetch_calibration_data.py --dest DIR      # then IEQA_CALIBRA_DIR=DIR

Every file is checked against its SHA-256 (:data:`FILES`) before it is kept: a file that
does not match is deleted and the script stops with an error saying what to do. Files
already in place with the right hash are not downloaded again. Only the standard library
is used, so it runs before ``make setup``. ``--base-url`` points it at another copy laid out
like the repository (``ResultsCalibra/...`` and ``LICENSE``; ``file://`` URLs work).

The data is IQA-PyTorch's, under the PolyForm Noncommercial License 1.0.0 (its
``LICENSE`` is fetched with it as ``LICENSE_IQA-PyTorch.txt``); the images are TID2013's.
It is for local testing and is never committed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMIT = "01ae427f9afd66842031d3a7cb694dcad5b5cbb8"
BASE_URL = f"https://raw.githubusercontent.com/chaofengc/IQA-PyTorch/{COMMIT}/"
DEST = REPO / ".data" / "pyiqa_calibra"

#: local name -> (path in the IQA-PyTorch repository, SHA-256 of the file at COMMIT)
FILES: dict[str, tuple[str, str]] = {
    "results_official.csv": ("ResultsCalibra/results_official.csv",
                             "92bea67a2009ce565c81d43f7d66bf39b73ecf43d3f8d91cf0d6f82ba8616b02"),
    "ref_dir/I03.bmp": ("ResultsCalibra/ref_dir/I03.bmp",
                        "28441215ca5b6358e6267717250a02eeec4fa5ef73ae454870b8426320f980a8"),
    "ref_dir/I04.bmp": ("ResultsCalibra/ref_dir/I04.bmp",
                        "c8500941a30397bc9e613a297e1286bdb955f49926148f58e7963d6e82b03c9f"),
    "ref_dir/I06.bmp": ("ResultsCalibra/ref_dir/I06.bmp",
                        "445c2c0fcb47898e9cd8e6de640f2545621d27cbb248c69ef2c84d8204723061"),
    "ref_dir/I08.bmp": ("ResultsCalibra/ref_dir/I08.bmp",
                        "b5d6738ece811f45f43c5bce425ad5d18d5c78466989001fe1129fcdd08efdab"),
    "ref_dir/I19.bmp": ("ResultsCalibra/ref_dir/I19.bmp",
                        "b8a2ede827d8db21c45f9ca1fb1c043bcec571b5a7243b4ea1aab3fb4feb7e0b"),
    "dist_dir/I03.bmp": ("ResultsCalibra/dist_dir/I03.bmp",
                         "bb817e7fef614dcc12b3a99af33ce3d201bc4d56c4827254c0bcc4fa6ea11151"),
    "dist_dir/I04.bmp": ("ResultsCalibra/dist_dir/I04.bmp",
                         "f3d685983aacd76b2c131579ea60cee345205a1169a4bd2ff5f3039ecf81729e"),
    "dist_dir/I06.bmp": ("ResultsCalibra/dist_dir/I06.bmp",
                         "726e043e99d8e07235c2535107d4bb6fc85bad0cb3cc7d6ba3ecf3364ac97539"),
    "dist_dir/I08.bmp": ("ResultsCalibra/dist_dir/I08.bmp",
                         "8ad39042d7e17d6c96ecfd8c4b9f0e98c803b303a92d368ef57bc9c3c40f5330"),
    "dist_dir/I19.bmp": ("ResultsCalibra/dist_dir/I19.bmp",
                         "e0c6000652d270d1c39b7094761d01e14695fc5aa7cb76b945be6391327ee886"),
    "LICENSE_IQA-PyTorch.txt": ("LICENSE",
                                "7cfe4165a261b8f7fb71331f68da011c583e28c3dc3208e934ae7ccc4441cc46"),
}

WHAT_TO_DO = (
    "Run `make calibration-data` again. If it keeps failing, download the files by hand from "
    f"https://github.com/chaofengc/IQA-PyTorch/tree/{COMMIT}/ResultsCalibra (ref_dir/, "
    "dist_dir/, results_official.csv) into .data/pyiqa_calibra, or copy a pyiqa_calibra folder "
    "from a machine that has ../shared/data and set IEQA_CALIBRA_DIR to it. Until then the "
    "calibration tests are skipped.")


class FetchError(Exception):
    """A file could not be downloaded, or did not match its SHA-256."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(base_url: str = BASE_URL, dest: Path = DEST,
          files: Mapping[str, tuple[str, str]] = FILES, *, timeout: float = 60,
          log: Callable[[str], None] = print) -> list[str]:
    """Put every file of ``files`` into ``dest``, checked; returns the names downloaded.

    A file already in ``dest`` with the expected SHA-256 is kept. Each download goes to
    ``NAME.part`` and replaces ``NAME`` only when its hash matches; otherwise it is deleted
    (together with a stale ``NAME``) and :class:`FetchError` is raised.
    """
    downloaded = []
    for name, (remote, expected) in files.items():
        target = dest / name
        if target.is_file() and sha256(target) == expected:
            continue
        url = base_url.rstrip("/") + "/" + remote
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(target.name + ".part")
        log(f"downloading {url}")
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer, open(part, "wb") as out:
                while chunk := answer.read(1 << 20):
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as exc:
            part.unlink(missing_ok=True)
            reason = getattr(exc, "reason", exc)
            raise FetchError(f"could not download {url}: {reason} (no network, a proxy that "
                             "needs HTTPS_PROXY, or a wrong --base-url?)") from exc
        got = sha256(part)
        if got != expected:
            part.unlink()
            target.unlink(missing_ok=True)
            raise FetchError(f"{url} has SHA-256 {got}, expected {expected}: it is not the file "
                             f"pinned at IQA-PyTorch {COMMIT[:12]} (a truncated download, a proxy "
                             "page, or another --base-url); the file was deleted")
        os.replace(part, target)
        downloaded.append(name)
    return downloaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEST,
                        help="folder to fill (default: .data/pyiqa_calibra of the repository)")
    parser.add_argument("--base-url", default=BASE_URL,
                        help="the IQA-PyTorch repository at the pinned commit, or a copy laid out "
                             "like it (file:// works); default: %(default)s")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per request")
    args = parser.parse_args(argv)
    try:
        downloaded = fetch(args.base_url, args.dest, timeout=args.timeout)
    except FetchError as exc:
        print(f"error: {exc}\n{WHAT_TO_DO}", file=sys.stderr)
        return 1
    kept = len(FILES) - len(downloaded)
    print(f"{args.dest}: {len(downloaded)} file(s) downloaded, {kept} already there; all "
          f"{len(FILES)} match their SHA-256 (IQA-PyTorch {COMMIT[:12]})")
    if args.dest.resolve() != DEST.resolve():
        print(f"the tests look there with IEQA_CALIBRA_DIR={args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
