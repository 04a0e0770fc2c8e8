"""Package layout: the top-level folders ``pipeline/``, ``stages/`` and ``classifiers/`` install as
``assay.pipeline``, ``assay.stages`` and ``assay.classifiers`` (one namespace in site-packages; a user's own
``pipeline.py`` can never shadow assay). Everything else lives in ``pyproject.toml``."""
from setuptools import find_namespace_packages, setup

TOPS = ("pipeline", "stages", "classifiers")
EXCLUDE = ["*__pycache__*", "*.egg-info*"]

packages = ["assay", "assay.io"]  # assay.io: plain input parsing (no datatrove), lives in assay/io
package_dir = {"assay": "assay"}
for top in TOPS:
    package_dir[f"assay.{top}"] = top
    packages.append(f"assay.{top}")
    packages += [f"assay.{top}.{p}" for p in find_namespace_packages(top, exclude=EXCLUDE)]

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={
        "assay.pipeline": ["recipes/*.yaml", "recipes/**/*.yaml", "sample/**/*"],
        "assay.classifiers": ["models/*.ftz", "models/*.json", "models/*.md", "configs/*.yaml"],
        "assay.stages": ["**/*.yaml", "**/*.json", "web/data/ldnoobw/*"],
    },
    include_package_data=True,
)
