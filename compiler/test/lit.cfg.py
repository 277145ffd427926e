# lit configuration for the tdist compiler tests.
import os

import lit.formats

config.name = "tdist-compiler"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["e2e", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "check_symbols.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tdist_obj_root, "test")

config.substitutions.append(("tdist-opt", os.path.join(config.tdist_tools_dir, "tdist-opt")))
config.substitutions.append(("FileCheck", config.filecheck))
import sys
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%ascend_symbols",
                             os.path.join(config.tdist_src_root, "..", "device", "Ascend", "symbols.def")))
config.substitutions.append(("%check_symbols", os.path.join(config.tdist_src_root, "test", "check_symbols.py")))
if config.mlir_translate:
    config.substitutions.append(("mlir-translate", config.mlir_translate))
    config.available_features.add("mlir-translate")
if config.llc:
    config.substitutions.append(("%llc", config.llc))
    config.available_features.add("llc")
