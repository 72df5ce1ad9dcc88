"""Modules that moved (issue 42: the released evaluators to ieqa.scorers.published,
bench.editors to bench.rank_editors): the old names (ieqa.MOVED_MODULES) still import, as
the same modules, with a DeprecationWarning naming the new one."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

MOVED = {"ieqa.scorers.vlm.editreward": "ieqa.scorers.published.editreward",
         "ieqa.scorers.vlm.kris_judge": "ieqa.scorers.published.kris_judge",
         "ieqa.scorers.vlm.vie_judge": "ieqa.scorers.published.vie_judge",
         "ieqa.scorers.vlm.published_prompts": "ieqa.scorers.published.base",
         "ieqa.bench.editors": "ieqa.bench.rank_editors"}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_is_the_new_module_with_a_warning(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    # the moved module keeps its own spec: found by its new name, at its file
    spec = importlib.util.find_spec(MOVED[old])
    assert spec.name == MOVED[old] and spec.origin.endswith(MOVED[old].split(".")[-1] + ".py")
    assert module.__spec__ is spec and module.__name__ == MOVED[old]


def test_the_release_loaders_moved_out_of_backends() -> None:
    from ieqa.scorers.published.lora_release import release_folder

    with pytest.warns(DeprecationWarning, match="ieqa.backends.lora_release moved to "
                                                "ieqa.scorers.published.lora_release"):
        from ieqa.backends.lora_release import release_folder as old
    assert old is release_folder
