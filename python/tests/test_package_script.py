"""argus.package_script: the preamble of examples/triton_packages/*/run.py. Each script is run
with stand-in torch and triton modules whose CUDA answers are fixed, so the skips, the usage
errors and the version line are the same on a machine with a GPU and on one without; no kernel
runs."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "examples" / "triton_packages").glob("*/run.py"))

TORCH = '''__version__ = "9.9.9"
class cuda:
    @staticmethod
    def is_available():
        return {cuda}
    @staticmethod
    def get_device_name():
        return "Stand-in GPU"
'''


def stand_ins(folder, cuda):
    """torch (``cuda.is_available()`` is ``cuda``) and triton packages under ``folder``."""
    for name, text in (("torch", TORCH.format(cuda=cuda)), ("triton", '__version__ = "8.8.8"\n')):
        os.makedirs(os.path.join(folder, name))
        Path(folder, name, "__init__.py").write_text(text)


def run(script, stubs, *args, extra_path=()):
    path = os.pathsep.join([str(ROOT / "python"), stubs, *extra_path])
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, cwd=tempfile.gettempdir())


class Scripts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.no_cuda = os.path.join(cls.tmp.name, "no_cuda")
        cls.cuda = os.path.join(cls.tmp.name, "cuda")
        stand_ins(cls.no_cuda, False)
        stand_ins(cls.cuda, True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_there_are_the_five_scripts(self):
        self.assertEqual([s.parent.name for s in SCRIPTS],
                         ["geak_flash_attn", "geak_matmul", "liger_cross_entropy",
                          "liger_rms_norm", "liger_swiglu"])

    def test_without_a_cuda_device_every_script_skips_with_77(self):
        for script in SCRIPTS:
            with self.subTest(script.parent.name):
                r = run(script, self.no_cuda)
                self.assertEqual((r.returncode, r.stdout, r.stderr),
                                 (77, "", "run.py: no CUDA device\n"))

    def test_the_skip_comes_before_the_command_line_is_read(self):
        r = run(SCRIPTS[0], self.no_cuda, "--reps", "0")
        self.assertEqual((r.returncode, r.stderr), (77, "run.py: no CUDA device\n"))


class Preamble(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, str(ROOT / "python"))
        from argus import package_script
        self.ps = package_script

    def tearDown(self):
        sys.path.remove(str(ROOT / "python"))

    def exit_code(self, call, argv=("run.py",)):
        saved = sys.argv
        sys.argv = list(argv)
        try:
            with self.assertRaises(SystemExit) as e:
                call()
        finally:
            sys.argv = saved
        return e.exception.code

    def test_a_missing_package_skips_saying_how_to_install_it(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = self.exit_code(lambda: self.ps.require_package(
                "argus_no_such_package", "pip install it==1.0", "kernels/k.py"))
        self.assertEqual((code, err.getvalue()), (77, "run.py: argus_no_such_package is not "
                                                      "installed (pip install it==1.0)\n"))

    def test_an_installed_package_gives_its_file(self):
        path = self.ps.require_package("unittest", "-", "case.py")
        self.assertEqual(Path(path), Path(unittest.__file__).parent / "case.py")
        self.assertIsNone(self.ps.require_package("unittest", "-"))

    def test_reps_must_be_a_positive_whole_number(self):
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(self.exit_code(lambda: self.ps.parse_reps("Doc."),
                                            ["run.py", "--reps", "0"]), 2)
            self.assertEqual(self.exit_code(lambda: self.ps.parse_reps("Doc."),
                                            ["run.py", "--reps", "x"]), 2)
        saved = sys.argv
        try:
            sys.argv = ["run.py", "--reps", "3"]
            self.assertEqual(self.ps.parse_reps("Doc."), 3)
            sys.argv = ["run.py"]
            self.assertEqual(self.ps.parse_reps("Doc."), 1)
        finally:
            sys.argv = saved

    def test_the_version_line_names_package_triton_torch_gpu_and_kernel_file(self):
        torch = types.SimpleNamespace(__version__="9.9.9", cuda=types.SimpleNamespace(
            get_device_name=lambda: "Stand-in GPU"))
        triton = types.SimpleNamespace(__version__="8.8.8")
        out = io.StringIO()
        with mock.patch.dict(sys.modules, {"torch": torch, "triton": triton}), \
                contextlib.redirect_stdout(out):
            self.ps.print_versions("argus-no-such-dist")
            self.ps.print_versions("argus-no-such-dist", kernel_file="/k.py")
        line = "argus-no-such-dist unknown (no distribution metadata), triton 8.8.8, torch 9.9.9, "
        self.assertEqual(out.getvalue(),
                         f"{line}Stand-in GPU\n{line}Stand-in GPU; kernel from /k.py\n")

    def test_a_distribution_without_metadata_is_named_so(self):
        self.assertEqual(self.ps.dist_version("argus-no-such-dist"),
                         "unknown (no distribution metadata)")


if __name__ == "__main__":
    unittest.main()
