"""The package installs from a fresh clone through the README's commands
(ctest `python`): git clone, a venv, pip install, then tdsl from the venv
compiles a kernel with the tdslc it bundled.

pip runs with --no-build-isolation (CI has no network: setuptools and wheel
come from scripts/setup.sh) and TDSL_CMAKE_BUILD_DIR set to the build tree
under test ($TDSL_TEST_BUILD_DIR, else the repository's build/), so that
setup.py builds the two targets it bundles there instead of configuring and
building tdslc a second time."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class InstallTest(unittest.TestCase):
    def test_pip_install_from_clone(self):
        if not os.path.isdir(os.path.join(REPO, ".git")) and \
                not os.path.isfile(os.path.join(REPO, ".git")):
            self.skipTest("the sources are not a git checkout: nothing to clone")
        tree = os.environ.get("TDSL_TEST_BUILD_DIR") or os.path.join(REPO, "build")
        tmp = tempfile.mkdtemp(prefix="tdsl-install-")
        try:
            clone, venv = os.path.join(tmp, "clone"), os.path.join(tmp, "venv")
            subprocess.run(["git", "clone", "-q", REPO, clone], check=True)
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            env = dict(os.environ, TDSL_CMAKE_BUILD_DIR=tree, TDSL_CACHE_DIR=os.path.join(
                tmp, "cache"))
            for var in ("TDSL_TDSLC", "PYTHONPATH"):
                env.pop(var, None)  # the installed package must stand alone
            pip = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q",
                                  "--no-build-isolation", "--no-deps", clone],
                                 capture_output=True, text=True, env=env)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            probe = ("import tdsl, os\n"
                     "print(os.path.relpath(tdsl.find_tdslc(), os.path.dirname(tdsl.__file__)))\n"
                     "m = tdsl.compile('kernel k(X: f32[N]) -> (Y: f32[N]) {\\n Y[i] = X[i]\\n}',"
                     " arch='sm_90')\n"
                     "print(m.k.signature)\n")
            if not shutil.which("nvcc") and not os.path.exists("/usr/local/cuda/bin/nvcc"):
                probe = probe.split("m = ")[0]
            run = subprocess.run([os.path.join(venv, "bin", "python"), "-c", probe], cwd=tmp,
                                 capture_output=True, text=True, env=env)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertTrue(run.stdout.startswith("_prefix/bin/tdslc\n"), run.stdout)
            if "m = " in probe:
                self.assertIn("k(X: f32[N]) -> (Y: f32[N])", run.stdout)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
