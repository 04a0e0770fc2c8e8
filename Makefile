# The two fresh-machine commands (see README):
#   make run    set up .venv and run the default recipe on the embedded sample
#   make test   set up .venv (+ test services when root) and run the whole test suite
.PHONY: setup run test services clean

setup:
	bash scripts/setup.sh

run: setup
	.venv/bin/assay run --output runs/default

services:
	bash scripts/services.sh

test: setup services
	.venv/bin/python -m pytest -q

clean:
	rm -rf runs .pytest_cache
