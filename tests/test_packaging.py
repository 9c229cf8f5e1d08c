"""The installed package holds every C source tgrad builds at run time: pyproject's package-data globs cover
each ``*.c`` under tgrad/ (a source left out installs a tgrad that warns and falls back to Python)."""
import fnmatch
import os
import tomllib

CPU_ONLY = True     # (a file check)


def test_every_c_source_is_package_data():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # (the checkout, not an install)
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    missing = []
    for d, _, files in os.walk(os.path.join(root, "tgrad")):
        pkg = os.path.relpath(d, root).replace(os.sep, ".")
        for name in files:
            if name.endswith(".c") and not any(fnmatch.fnmatch(name, g) for g in data.get(pkg, ())):
                missing.append(f"{pkg}/{name}")
    assert not missing, f"C sources not in [tool.setuptools.package-data]: {missing}"
