"""The per-phase progress line, driven by the files tasks write (no run needed)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from rich.console import Console

from assay.pipeline.progress import PhaseProgress, read_snapshot


def _write(logs: Path, rank: int, docs: int, chars: int, done: bool = False) -> None:
    (logs / "progress").mkdir(parents=True, exist_ok=True)
    (logs / "progress" / f"{rank:05d}.json").write_text(json.dumps({"documents": docs, "chars": chars, "done": done}))
    if done:
        (logs / "completions").mkdir(exist_ok=True)
        (logs / "completions" / f"{rank:05d}").write_text("")


def test_snapshot_sums_tasks(tmp_path: Path):
    _write(tmp_path, 0, 10, 2_000_000, done=True)
    _write(tmp_path, 1, 5, 500_000)
    (tmp_path / "progress" / "00002.json").write_text("{not json")  # being rewritten: skipped
    s = read_snapshot(tmp_path)
    assert (s.documents, s.chars, s.tasks_done) == (15, 2_500_000, 1)


def test_plain_lines_in_a_pipe_with_rate_and_eta(tmp_path: Path):
    buf = io.StringIO()
    p = PhaseProgress(Console(file=buf, width=200, color_system=None), live=False, poll_s=0.05, plain_every=0.2)
    sig, dec = tmp_path / "signals", tmp_path / "decide"
    p.start("signals", sig, 2)
    _write(sig, 0, 100, 1_500_000, done=True)
    time.sleep(0.5)  # a long phase: a line while it runs, with an ETA from the finished task
    _write(sig, 1, 200, 3_000_000, done=True)
    p.finish()
    p.start("decide", dec, 2)  # later phases know how many documents to expect
    _write(dec, 0, 50, 100_000)
    time.sleep(0.5)
    _write(dec, 0, 200, 200_000, done=True)
    _write(dec, 1, 100, 100_000, done=True)
    p.finish()
    p.close()
    out = buf.getvalue().splitlines()
    running = [ln for ln in out if ln.startswith("signals") and "ETA" in ln]
    assert running and "1/2 tasks" in running[0] and "100 docs" in running[0] and "ETA " in running[0]
    assert "ETA ?" not in running[0]
    final = [ln for ln in out if ln.startswith("signals") and "ETA" not in ln]
    assert len(final) == 1 and "2/2 tasks" in final[0] and "300 docs" in final[0] and "4.5 MB" in final[0]
    assert "docs/s" in final[0]
    assert any(ln.startswith("decide") and "/300" in ln and "ETA" in ln for ln in out), out
    assert p.finished == ["signals", "decide"]


def test_quiet_prints_nothing_and_skipped_phases_say_so(tmp_path: Path):
    buf = io.StringIO()
    _write(tmp_path / "a", 0, 3, 30, done=True)
    p = PhaseProgress(Console(file=buf, width=200, color_system=None), live=False, enabled=False)
    p.start("a", tmp_path / "a", 1)
    p.finish()
    assert buf.getvalue() == "" and p.finished == ["a"]
    p = PhaseProgress(Console(file=buf, width=200, color_system=None), live=False)
    p.start("a", tmp_path / "a", 1)
    p.finish()
    assert "already complete (skipped)" in buf.getvalue()
