"""What a person sees in the terminal: line counts on a TTY and in a pipe, progress, --quiet/--verbose,
--version, Ctrl-C, and one-line user errors with exit code 2."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import shutil
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PHASES = ("signals", "dedup_signatures", "dedup_buckets", "dedup_clusters", "decide_plan", "decide", "finalize")
DATATROVE_NOISE = ("PIPELINE", "Stats:", "Launching pipeline", "tasks completed", "INFO", "SUCCESS")


def cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, "-m", "assay.pipeline.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=full_env, timeout=timeout)


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


# ------------------------------------------------------------------------------------ pipe and tty


@pytest.fixture(scope="module")
def piped_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("piped") / "run"
    return out, cli("run", "--output", str(out))


@pytest.mark.slow
def test_default_run_in_a_pipe_is_short_and_informative(piped_run):
    out, r = piped_run
    assert r.returncode == 0, r.stderr[-3000:]
    shown = lines(r.stdout) + lines(r.stderr)
    assert len(shown) <= 15, "\n".join(shown)
    assert not any(n in r.stdout + r.stderr for n in DATATROVE_NOISE), r.stdout + r.stderr
    for ph in PHASES:  # one progress line per phase, with tasks and (for readers) documents and a rate
        row = [ln for ln in shown if ln.startswith(ph + " ")]
        assert len(row) == 1, (ph, shown)
    manifest = json.loads((out / "manifest.json").read_text())
    signals_line = next(ln for ln in shown if ln.startswith("signals "))
    docs = manifest["totals"]["documents"] + manifest["excluded"]["documents"]
    assert f"{docs} docs" in signals_line and "docs/s" in signals_line and "2/2 tasks" in signals_line
    assert any(ln.startswith(f"{docs} documents: {manifest['totals']['documents']} written") for ln in shown), shown
    # the datatrove task logs are in the phase's log folder instead of the terminal
    for ph in PHASES:
        logs = list((out / "logs" / ph / "logs").glob("task_*.log"))
        assert logs and "Launching pipeline" in logs[0].read_text(), ph


@pytest.mark.slow
def test_piped_output_is_not_wrapped_at_80_columns(piped_run):
    out, _ = piped_run
    r = cli("report", str(out))
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("assay run ") and "documents in" in first and first.rstrip().endswith("excluded"), first
    assert max(len(ln) for ln in r.stdout.splitlines()) > 80


def _screen(raw: str) -> list[str]:
    """The final screen of a terminal that received `raw`: enough of VT100 for rich's live display
    (carriage return, newline, cursor up, erase line, colors)."""
    rows: list[str] = [""]
    y = x = 0
    for tok in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if tok == "\n":
            y += 1
            x = 0
            if y == len(rows):
                rows.append("")
        elif tok == "\r":
            x = 0
        elif tok.startswith("\x1b["):
            n = int(re.sub(r"\D", "", tok[2:-1]) or 1) if tok[-1] in "AB" else 0
            if tok[-1] == "A":
                y = max(0, y - n)
            elif tok[-1] == "K":
                rows[y] = rows[y][:x] if tok[2:-1] not in ("2",) else ""
        else:
            row = rows[y].ljust(x)
            rows[y] = row[:x] + tok + row[x + len(tok):]
            x += len(tok)
    return [r for r in rows if r.strip()]


@pytest.mark.slow
def test_default_run_on_an_80_column_tty_fits_in_15_lines(tmp_path: Path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    # run from the repository root, as `make run` does (paths shown relative, the eval sets found)
    out = Path("runs") / f"tty-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-m", "assay.pipeline.cli", "run", "--output", str(out)],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, cwd=REPO)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(master)
    shutil.rmtree(REPO / out, ignore_errors=True)
    raw = b"".join(chunks).decode("utf-8", "replace")
    assert proc.returncode == 0, raw[-3000:]
    assert "\x1b[" in raw, "a terminal gets rich's live progress"
    screen = _screen(raw)
    assert len(screen) <= 15, "\n".join(screen)
    for ph in PHASES:
        assert sum(1 for ln in screen if ln.startswith(ph + " ")) == 1, (ph, screen)
    assert not any(n in raw for n in DATATROVE_NOISE)
    assert any("documents:" in ln and "written" in ln for ln in screen), screen


@pytest.mark.slow
def test_quiet_verbose_and_default_output_dir(piped_run, tmp_path: Path):
    src, _ = piped_run
    # no --output: the recipe's name; --quiet: only the summary
    r = cli("run", "retier", "--set", f"retier_from={src}", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "runs" / "retier" / "manifest.json").exists()
    assert not any(ln.startswith(ph + " ") for ln in lines(r.stdout) for ph in PHASES), r.stdout
    assert "documents:" in r.stdout and r.stderr.strip() == ""
    # --verbose: datatrove's task logs on the terminal as well
    r = cli("run", "retier", "--set", f"retier_from={src}", "--set", "decisions.drop_tiers=[low]", "--verbose",
            "--output", str(tmp_path / "verbose"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Launching pipeline" in r.stderr and "decide " in r.stdout


@pytest.mark.slow
def test_ctrl_c_says_what_finished_and_how_to_resume(tmp_path: Path):
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    args = ["run", "--output", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "assay.pipeline.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    comp = out / "logs" / "signals" / "completions"
    deadline = time.monotonic() + 300
    while not (comp.is_dir() and any(comp.iterdir())) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: SIGINT to the whole foreground group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    err_lines = lines(stderr)
    assert len(err_lines) == 1 and "Traceback" not in stderr, stderr
    assert err_lines[0].startswith("interrupted: finished ")
    resume = err_lines[0].split("resume with: ", 1)[1]
    assert resume == f"assay run --output {out}"
    # the report says which phases are missing, not a conservation mismatch
    r = cli("report", str(out))
    assert r.returncode == 0, r.stderr
    assert "incomplete: phases" in r.stdout and "decide" in r.stdout and "MISMATCH" not in r.stdout
    # the printed command resumes and finishes the run
    r = cli(*resume.split()[1:])
    assert r.returncode == 0, r.stderr[-3000:]
    assert (out / "manifest.json").exists()
    r = cli("report", str(out))
    assert "incomplete" not in r.stdout and "conservation" in r.stdout and "ok" in r.stdout


# ------------------------------------------------------------------------------------------ errors


def test_version():
    from importlib.metadata import version

    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"assay {version('assay')}"


def _one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    err = lines(r.stderr)
    assert len(err) == 1, r.stderr
    for n in needles:
        assert n in err[0], (n, err[0])


def test_unknown_recipe_lists_the_shipped_ones(tmp_path: Path):
    r = cli("run", "no_such_recipe", cwd=tmp_path)
    _one_line_error(r, "recipe not found: no_such_recipe", "default", "retier", "code", "pdf")


def test_slurm_without_sbatch_is_one_line(tmp_path: Path):
    bindir = Path(sys.executable).parent
    r = cli("run", "--executor", "slurm", "--output", str(tmp_path / "o"), env={"PATH": str(bindir)})
    _one_line_error(r, "sbatch")
    assert not (tmp_path / "o" / "logs").exists()


def test_bad_executor_settings_are_one_line(tmp_path: Path):
    r = cli("run", "--set", "executor.settings.bogus=1", "--output", str(tmp_path / "o"))
    _one_line_error(r, "executor.settings.bogus")
    r = cli("run", "--set", "executor.settings.start_method=threads", "--output", str(tmp_path / "o"))
    _one_line_error(r, "start_method")


def test_bad_paths_are_one_line(tmp_path: Path):
    r = cli("run", "--set", "sources.web.reader.params.paths=[/no/such/dir]", "--output", str(tmp_path / "o"))
    _one_line_error(r, "/no/such/dir")
    r = cli("report", str(tmp_path / "nothing"))
    _one_line_error(r, "no such run directory")
    r = cli("show", str(tmp_path))
    _one_line_error(r, "not a run directory")
    r = cli("run", "retier", "--set", f"retier_from={tmp_path / 'nothing'}", "--output", str(tmp_path / "o"))
    _one_line_error(r, "retier_from")


def test_set_type_errors_name_the_flag():
    r = cli("describe", "--set", "decisions.tiers.high.min_bucket=sixteen")
    _one_line_error(r, "--set decisions.tiers.high.min_bucket=sixteen", "expected an integer")
    r = cli("describe", "--set", "decisions.rules.min_words.value=many")
    _one_line_error(r, "--set decisions.rules.min_words.value=many", "needs a number")
    r = cli("describe", "--set", "decisions.rules.min_wordz.value=1")
    _one_line_error(r, "no item named 'min_wordz'", "min_words")
    r = cli("describe", "--set", "executor.taskz=3")
    _one_line_error(r, "--set executor.taskz=3", "unknown key 'taskz'")


def test_usage_errors_are_one_line():
    _one_line_error(cli("run", "--workers", "0"), "--workers", "assay run --help")
    _one_line_error(cli("bogus"), "No such command 'bogus'")
    _one_line_error(cli("report"), "Missing argument")
    _one_line_error(cli("run", "--executor", "cloud"), "--executor must be local, slurm or ray")
    _one_line_error(cli("run", "--quiet", "--verbose"), "exclude each other")
    r = cli()
    assert r.returncode == 0 and "Usage" in r.stdout  # bare `assay`: the help


def test_console_prints_emoji_codes_as_they_are_without_loading_rich_emoji_table():
    """``:fire:`` in a path or a recipe value is printed as typed (not as an emoji), and rich's emoji table
    (about 2 MiB, which every phase child forked from the launching process inherited) is never loaded."""
    code = ("import io, sys\n"
            "from assay.pipeline.commands import _make_console\n"
            "c = _make_console(); c.file = io.StringIO()\n"
            "c.print('run: /tmp/:fire:/out [bold]done[/]')\n"
            "print(repr(c.file.getvalue()), 'rich._emoji_codes' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "'run: /tmp/:fire:/out done\\n' False"
