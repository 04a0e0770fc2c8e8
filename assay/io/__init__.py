"""Plain input parsing shared by stages and classifiers: imports nothing else of the project and not datatrove
(import-linter contract in pyproject.toml)."""
