"""The modules renamed so that "registry" means one thing (issue 33, item 6) keep their old names:
each old name, and every module below it, imports as the SAME module object as the new name
(:func:`fairltr.lazy.moved_modules`), whichever is imported first; an unknown module below an
old name is still a ModuleNotFoundError."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

MOVED = {
    "fairltr.tracking.registry": "fairltr.tracking.model_registry",
    "fairltr.tracking.registry.promotion": "fairltr.tracking.model_registry.promotion",
    "fairltr.tracking.registry.webhook_signature": "fairltr.tracking.model_registry.webhook_signature",
    "fairltr.workflows.registry": "fairltr.workflows.model_registry",
    "fairltr.workflows.sweep_registry": "fairltr.workflows.sweep_plugins",
    "fairltr.losses.registry": "fairltr.losses.plugins",
    "fairltr.metrics.registry": "fairltr.metrics.plugins",
    "fairltr.cli.registry_commands": "fairltr.cli.model_registry_commands",
}


def _in_a_fresh_interpreter(code: str) -> None:
    """Run ``code`` (which prints ``ok`` at its end) in a new Python process; its stderr on failure."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_name_is_the_new_module(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_the_old_names_work_first_in_a_fresh_interpreter():
    code = (
        "import importlib, sys\n"
        "from fairltr.tracking.registry.promotion import promote\n"
        "from fairltr.tracking import registry\n"
        "from fairltr.losses.registry import get_loss\n"
        "import fairltr.metrics.registry as m\n"
        "new = importlib.import_module('fairltr.tracking.model_registry.promotion')\n"
        "assert promote is new.promote and registry.promotion is new\n"
        "assert get_loss is importlib.import_module('fairltr.losses.plugins').get_loss\n"
        "assert m is sys.modules['fairltr.metrics.plugins'] is sys.modules['fairltr.metrics.registry']\n"
        "print('ok')\n")
    _in_a_fresh_interpreter(code)


def test_an_unknown_module_below_an_old_name_is_still_missing():
    with pytest.raises(ModuleNotFoundError, match=r"No module named .fairltr\.tracking\.registry\.no_such_module"):
        importlib.import_module("fairltr.tracking.registry.no_such_module")


def test_the_new_module_keeps_its_own_spec_and_a_missing_old_name_is_not_found():
    code = (
        "import importlib, importlib.util, importlib.resources\n"
        "import fairltr.losses.registry as old\n"
        "import fairltr.tracking.registry.promotion as p\n"
        "new = importlib.import_module('fairltr.losses.plugins')\n"
        "assert old is new and new.__spec__.name == 'fairltr.losses.plugins', new.__spec__\n"
        "assert p.__spec__.name == 'fairltr.tracking.model_registry.promotion'\n"
        "assert importlib.util.find_spec('fairltr.losses.plugins').name == 'fairltr.losses.plugins'\n"
        "assert importlib.util.find_spec('fairltr.tracking.registry.no_such_module') is None\n"
        "assert importlib.resources.files('fairltr.tracking.model_registry').joinpath('promotion.py').is_file()\n"
        "assert importlib.reload(new) is new and new.__name__ == 'fairltr.losses.plugins'\n"
        "print('ok')\n")
    _in_a_fresh_interpreter(code)
