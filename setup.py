"""Builds tdslc and the runtime with CMake and bundles them into the tdsl
package: `cmake --install --component tdslc` (tdslc, the runtime archive and
headers, as CMakeLists.txt's install rules name them) with the prefix
tdsl/_prefix in setuptools' build tree, so that tdslc finds the runtime
headers beside itself.

The CMake tree is $TDSL_CMAKE_BUILD_DIR when set, else the repository's
build/ (the README's): configured there if it is not yet, and built for the
two targets only, so that an existing build is reused instead of repeated."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildWithTdslc(build_py):
    def run(self):
        super().run()
        tree = os.environ.get("TDSL_CMAKE_BUILD_DIR") or os.path.join(ROOT, "build")
        if not os.path.exists(os.path.join(tree, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", tree, "-G", "Ninja",
                                   "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", tree, "--target", "tdslc", "tdsl_runtime"])
        prefix = os.path.join(self.build_lib, "tdsl", "_prefix")
        shutil.rmtree(prefix, ignore_errors=True)  # nothing left from an older build
        subprocess.check_call(["cmake", "--install", tree, "--component", "tdslc",
                               "--prefix", prefix])


class BinaryDistribution(Distribution):
    """The wheel holds a tdslc binary: tag it for this platform."""

    def has_ext_modules(self):
        return True


class AnyPython3Wheel(bdist_wheel):
    """...but not for this Python: the package is pure Python and calls
    tdslc as a program, so any Python 3 on the platform can use it."""

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


setup(packages=["tdsl"], package_dir={"": "python"},
      cmdclass={"build_py": BuildWithTdslc, "bdist_wheel": AnyPython3Wheel},
      distclass=BinaryDistribution, options={"build": {"build_base": "build/python-package"}})
