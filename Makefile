# The two fresh-machine commands (see README):
#   make run    set up .venv and run the default recipe on the embedded sample
#   make test   set up .venv (+ test services when root) and run the whole test suite
#   make notebook   install the `notebooks` extra and open the threshold-tuning notebook in JupyterLab
.PHONY: setup run test services clean notebook

setup:
	bash scripts/setup.sh

run: setup
	.venv/bin/assay run

notebook: setup
	.venv/bin/python -m pip install -q -e '.[notebooks]'
	.venv/bin/jupyter lab notebooks/tune_thresholds.ipynb

services:
	bash scripts/services.sh

test: setup services
	.venv/bin/python -m pytest -q

clean:
	rm -rf runs .pytest_cache
