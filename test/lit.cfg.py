# lit configuration for tdslc: every suite under test/ runs through here.
import os
import lit.formats

config.name = "tdslc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tdsl", ".tir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "unit", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tdsl_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.tdsl_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%examples", os.path.join(config.tdsl_src_root, "dsl", "examples")))
config.substitutions.append(("%srcroot", config.tdsl_src_root))
config.substitutions.append(("%tdsl_tools", config.tdsl_tools_dir))
# The runtime library (libtdsl_runtime.a), for tests that link a caller.
config.substitutions.append(("%tdsl_lib", os.path.join(config.tdsl_obj_root, "lib")))
# tdslc's build folder, for the test that installs it (cmake --install).
config.substitutions.append(("%tdsl_obj_root", config.tdsl_obj_root))

# nvcc compiles the emitted CUDA in test/backend (no GPU needed); tests that
# need it say `REQUIRES: nvcc` and are UNSUPPORTED where it is absent.
import shutil
_nvcc = shutil.which("nvcc", path=os.pathsep.join(
    ["/usr/local/cuda/bin", config.environment.get("PATH", "")]))
if _nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", _nvcc))
    config.substitutions.append(("%cuda_include", os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(_nvcc))), "include")))
