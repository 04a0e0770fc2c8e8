"""Entry point of the `assay` command line (console script ``assay``, ``python -m assay.pipeline.cli``); the
commands are in `assay.pipeline.commands`, imported when `main` runs.

Kept light on purpose: the workers of a local pool re-run the script that started the run when they start
(multiprocess prepares each worker so, to find what ``__main__`` defines), so whatever this module imports,
every worker holds. The commands' typer and rich (about 4 MiB of resident memory per process) stay in the
launching process. Other names (``app``, ...) are looked up in `assay.pipeline.commands` on first use.
"""

from __future__ import annotations


def main() -> None:  # console script entry point
    from assay.pipeline.commands import main as _main

    _main()


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from assay.pipeline import commands

    return getattr(commands, name)


if __name__ == "__main__":
    main()
