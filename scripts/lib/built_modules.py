"""Where `swift build` put the package's modules, and the flags a tool needs to load them (the C modules of the
dependencies, by their module maps, as SwiftPM passes them). Honours STRUCTPG_SCRATCH_PATH as scripts/test.sh does."""
import glob
import os
import re
import subprocess


def scratch_path():
    return os.environ.get("STRUCTPG_SCRATCH_PATH", ".build")


def bin_path():
    return subprocess.run(["swift", "build", "--scratch-path", scratch_path(), "--show-bin-path"], capture_output=True, text=True,
                          check=True).stdout.strip()


def modules_path():
    return os.path.join(bin_path(), "Modules")


def clang_flags():
    checkouts = os.path.join(scratch_path(), "checkouts")
    maps = glob.glob(os.path.join(bin_path(), "*.build", "module.modulemap"))
    maps += glob.glob(os.path.join(checkouts, "*", "Sources", "*", "include", "module.modulemap"))
    maps += glob.glob(os.path.join(checkouts, "*", "Sources", "*", "module.modulemap"))
    flags = []
    for map in maps:
        flags += ["-Xcc", f"-fmodule-map-file={os.path.abspath(map)}", "-Xcc", f"-I{os.path.dirname(os.path.abspath(map))}"]
    return flags


def target_triple():
    info = subprocess.run(["swiftc", "-print-target-info"], capture_output=True, text=True, check=True).stdout
    return re.search(r'"triple": "([^"]+)"', info).group(1)
