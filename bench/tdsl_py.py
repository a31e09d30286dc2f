"""Builds .tdsl files into shared libraries for the Python side of the bench
(peers.py, ablation.py), with the runtime objects of test/gpu/gpu_check.py."""
import os
import subprocess
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "test", "gpu"))
import gpu_check  # noqa: E402  (build_runtime, run_logged, find_nvcc)


class Builder:
    def __init__(self, tdslc, out_dir, arch="sm_90"):
        self.tdslc, self.out_dir, self.arch = tdslc, out_dir, arch
        self.nvcc = gpu_check.find_nvcc(None)
        self.cuda_home = os.path.dirname(os.path.dirname(os.path.realpath(self.nvcc)))
        self.include = subprocess.run([tdslc, "--print-include-dir"], capture_output=True,
                                      text=True, check=True).stdout.strip()
        os.makedirs(out_dir, exist_ok=True)
        args = types.SimpleNamespace(runtime_src=os.path.join(REPO, "runtime", "src"),
                                     runtime_include=self.include, arch=arch)
        self.runtime_objects = gpu_check.build_runtime(args, self.nvcc, out_dir)

    def passes(self):
        out = subprocess.run([self.tdslc, "--list-passes"], capture_output=True, text=True,
                             check=True).stdout
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def build(self, source, name, flags=()):
        """tdslc SOURCE FLAGS -> NAME.cu -> libNAME.so; returns the library path."""
        cu = os.path.join(self.out_dir, name + ".cu")
        lib = os.path.join(self.out_dir, "lib" + name + ".so")
        log = os.path.join(self.out_dir, name + ".log")
        cmd = [self.tdslc, source, "--emit=cuda", "-o", cu, f"--arch={self.arch}", *flags]
        if gpu_check.run_logged(cmd, log).returncode != 0:
            raise RuntimeError(f"tdslc failed on {source}: see {log}")
        cudalib = os.path.join(self.cuda_home, "lib64")
        cmd = [self.nvcc, "-shared", "-O2", "-std=c++17", "-Xcompiler", "-fPIC",
               f"-arch={self.arch}", "-I", self.include, cu, *self.runtime_objects,
               "-cudart", "shared", f"-Xlinker=-rpath,{cudalib}", "-o", lib]
        if gpu_check.run_logged(cmd, log).returncode != 0:
            raise RuntimeError(f"nvcc failed on {cu}: see {log}")
        return lib
