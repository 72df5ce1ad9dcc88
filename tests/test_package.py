"""The top-level package: its re-exports are ieqa.data's and the scorers' public names,
imported on first use, and ``import ieqa`` imports neither."""

from __future__ import annotations

import subprocess
import sys


def _last_line(code: str) -> str:
    """The last line ``code`` prints in a fresh interpreter."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip().splitlines()[-1]


def test_the_reexports_are_the_data_model_and_the_scorer_registry() -> None:
    import ieqa.data
    import ieqa.scorers

    lazy = {name for name in ieqa.__all__ if name not in (
        "__version__", "IeqaError", "ManifestError", "UnknownDimensionError")}
    scorer_names = {"Scorer", "ScorerError", "ScoreResult", "ScorerInfo", "create_scorer",
                    "list_scorers", "load_evaluator", "save_evaluator", "scorer_info"}
    assert lazy == set(ieqa.data.__all__) | scorer_names
    for name in lazy:
        module = ieqa.data if name in ieqa.data.__all__ else ieqa.scorers
        assert getattr(ieqa, name) is getattr(module, name), name
    # subpackages as attributes, as before the re-exports were lazy
    code = "import ieqa; print(ieqa.data.EditSample.__name__, ieqa.registry.SCORERS.kind)"
    out = _last_line(code).split()
    assert out[0] == "EditSample", out
    namespace: dict[str, object] = {}
    exec("from ieqa import *", namespace)  # noqa: S102 - the star import users write
    assert {"EditSample", "create_scorer", "__version__"} <= set(namespace)


def test_import_ieqa_and_the_cli_stay_light() -> None:
    """Neither ``import ieqa`` nor building the ``ieqa`` command imports torch, scipy or a
    command's module; a command's module is imported when it runs."""
    code = ("import sys, ieqa, ieqa.cli; "
            "from typer.testing import CliRunner; "
            "CliRunner().invoke(ieqa.cli.app, ['--version']); "
            "heavy = sorted(m for m in ('torch', 'scipy', 'ieqa.scorers', 'ieqa.data.schema', "
            "'ieqa.commands.score') if m in sys.modules); print(heavy)")
    out = _last_line(code)
    assert out == "[]", out
    code = ("import sys, ieqa.cli; from typer.testing import CliRunner; "
            "r = CliRunner().invoke(ieqa.cli.app, ['score', '--help']); "
            "print(r.exit_code, 'ieqa.commands.score' in sys.modules, "
            "'ieqa.commands.train' in sys.modules)")
    out = _last_line(code)
    assert out == "0 True False", out


def test_the_extras_the_readme_and_getting_started_list_are_pyprojects() -> None:
    """The ``# extras: ...`` comment of the install line, in README.md and the getting
    started page, names every extra pyproject.toml defines (``dev`` aside) and no other."""
    import re
    from importlib.metadata import metadata
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = set(metadata("ieqa").get_all("Provides-Extra")) - {"dev"}  # pyproject's
    for page in ("README.md", "docs/getting-started.md"):
        listed = re.search(r"# extras: (.+)", (root / page).read_text()).group(1)
        assert set(listed.replace(" ", "").split(",")) == extras, (page, listed, extras)
