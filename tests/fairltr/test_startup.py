"""fairltr.startup: a Ctrl-C during the import of a package whose initialisation runs native code
(torch) is raised when that import ends, never inside it (where torch's pybind11 code aborts the
process with exit -6). Each test runs in a fresh interpreter with SIGINT's default handler."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# A package that signals itself halfway through its own initialisation, then finishes it: the
# marker file is written only when the KeyboardInterrupt waited for the end of the import.
PACKAGE = '''
import os, signal, sys, time
os.kill(os.getpid(), signal.SIGINT)
time.sleep(0.2)  # Python runs the handler here, between bytecodes
FINISHED = True
open(os.environ["MARKER"], "w").write("finished")
'''

RUN = '''
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import fairltr.startup as startup
startup.NATIVE_IMPORTS = frozenset({"selfinterrupting"})
if sys.argv[1] == "deferred":
    startup.defer_interrupts_in_native_imports()
try:
    import selfinterrupting
except KeyboardInterrupt:
    print("KeyboardInterrupt", "selfinterrupting" in sys.modules)
else:
    print("no interrupt")
print("handler restored", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
'''


def _run(tmp_path, mode: str) -> tuple[str, bool]:
    pkg = tmp_path / "selfinterrupting"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    marker = tmp_path / f"marker-{mode}"
    env = {"PYTHONPATH": str(tmp_path), "MARKER": str(marker), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", RUN, mode], env=env, capture_output=True, text=True, timeout=120,
                         preexec_fn=lambda: __import__("signal").signal(2, __import__("signal").SIG_DFL))
    assert out.returncode == 0, out.stderr
    return out.stdout, marker.exists()


def test_an_interrupt_during_a_native_import_is_raised_when_the_import_ends(tmp_path):
    stdout, finished = _run(tmp_path, "deferred")
    assert finished  # the package's initialisation ran to its end
    assert "KeyboardInterrupt False" in stdout  # then the interrupt, and the import counts as failed
    assert "handler restored True" in stdout


def test_without_the_deferral_the_interrupt_lands_inside_the_import(tmp_path):
    """The control: the same package without :func:`defer_interrupts_in_native_imports` is
    interrupted halfway (this is what happens inside torch's C++ initialisation)."""
    stdout, finished = _run(tmp_path, "plain")
    assert not finished
    assert "KeyboardInterrupt False" in stdout


def test_the_deferral_is_installed_once_and_leaves_other_imports_alone():
    code = ("import sys, fairltr.startup as s; s.defer_interrupts_in_native_imports(); "
            "s.defer_interrupts_in_native_imports(); import json, torch; "
            "print(sum(f is s._NativeImportFinder for f in sys.meta_path), type(json.__loader__).__name__, "
            "type(torch.__spec__.loader).__name__, float(torch.ones(2).sum()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "SourceFileLoader", "_DeferringLoader", "2.0"]
