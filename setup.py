"""The package map the wheel is built with (the rest of the metadata is in pyproject.toml).

The repository's top-level folders become subpackages of the one installed package, `kcoord`:
`protocol/` is `kcoord.protocol`, `coordinator/server/` is `kcoord.coordinator.server`, and so on.
"""

from setuptools import find_packages, setup

DESIGN_FOLDERS = ["protocol", "storage", "partition_log", "coordinator", "pipeline"]

package_dir = {"kcoord": "kcoord"}
packages = ["kcoord", *(f"kcoord.{p}" for p in find_packages("kcoord"))]
for folder in DESIGN_FOLDERS:
    package_dir[f"kcoord.{folder}"] = folder
    packages += [f"kcoord.{folder}", *(f"kcoord.{folder}.{p}" for p in find_packages(folder))]

setup(package_dir=package_dir, packages=packages)
