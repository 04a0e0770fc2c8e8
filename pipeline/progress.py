"""One progress line per phase, read from the files the tasks write (see executors.AssayLocalExecutor).

On a terminal: a rich progress bar per phase (tasks done, documents, MB of text, rate, ETA) that stays
as one line when the phase ends. Piped: one plain line when a phase ends, plus a line every
``plain_every`` seconds while a long phase runs. Tasks run in other processes; this only polls
``<logs>/progress/*.json`` and ``<logs>/completions/`` from a thread.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Snapshot:
    documents: int = 0
    chars: int = 0
    tasks_done: int = 0


def read_snapshot(logs_dir: Path) -> Snapshot:
    """Documents and text characters counted so far by a phase's tasks, and its finished tasks."""
    snap = Snapshot()
    for p in (logs_dir / "progress").glob("*.json"):
        try:
            d = json.loads(p.read_text())
        except (OSError, ValueError):  # being rewritten right now: next poll
            continue
        snap.documents += int(d.get("documents", 0))
        snap.chars += int(d.get("chars", 0))
    comp = logs_dir / "completions"
    snap.tasks_done = sum(1 for _ in comp.iterdir()) if comp.is_dir() else 0
    return snap


def _duration(s: float | None) -> str:
    if s is None or s != s or s == float("inf"):
        return "?"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class PhaseProgress:
    """Shows the running phase; ``start``/``finish`` per phase, ``close`` at the end (or on Ctrl-C)."""

    def __init__(self, console, *, live: bool, enabled: bool = True, poll_s: float = 0.5, plain_every: float = 30.0):
        self.console, self.live, self.enabled = console, live, enabled
        self.poll_s, self.plain_every = poll_s, plain_every
        self._progress = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._docs_seen: int | None = None  # documents read by the last phase that read documents
        self.current: str | None = None
        self.finished: list[str] = []

    # ------------------------------------------------------------------ state of the running phase
    def _info(self, final: bool = False) -> str:
        snap = read_snapshot(self._logs)
        elapsed = max(time.perf_counter() - self._t0, 1e-9)
        docs = snap.documents - self._base.documents
        parts = [f"{snap.tasks_done}/{self._tasks} tasks"]
        reads = snap.documents > 0 or (self._logs / "progress").is_dir()
        if reads:
            parts.append(f"{snap.documents:,} docs" + (f"/{self._expected:,}" if self._expected else ""))
            parts.append(f"{snap.chars / 1e6:.1f} MB" if snap.chars >= 1e5 else f"{snap.chars / 1e3:.0f} kB")
            parts.append(f"{docs / elapsed:,.1f} docs/s")
        if final:
            parts.append(f"{elapsed:.1f} s")
        else:
            eta = None
            if reads and self._expected and docs > 0:
                eta = max(0.0, (self._expected - snap.documents) / (docs / elapsed))
            elif snap.tasks_done > self._base.tasks_done:
                eta = elapsed / (snap.tasks_done - self._base.tasks_done) * (self._tasks - snap.tasks_done)
            parts.append(f"ETA {_duration(eta)}")
        self._last = snap
        return "  ".join(parts)

    def _poll(self) -> None:
        last_plain = time.perf_counter()
        while not self._stop.wait(self.poll_s):
            if self._progress is not None:
                info = self._info()
                self._progress.update(self._task, completed=self._last.tasks_done, info=info)
            elif time.perf_counter() - last_plain >= self.plain_every:
                self.console.print(f"{self.current:<15} {self._info()}", highlight=False, markup=False)
                last_plain = time.perf_counter()

    # ------------------------------------------------------------------------------ per phase
    def start(self, name: str, logs_dir: Path, tasks: int) -> None:
        self.current, self._logs, self._tasks = name, Path(logs_dir), max(1, tasks)
        self._t0 = time.perf_counter()
        self._base = read_snapshot(self._logs)
        self._last = self._base
        self._expected = self._docs_seen if name != "signals" else None
        if not self.enabled:
            return
        if self.live:
            if self._progress is None:
                from rich.progress import BarColumn, Progress, TextColumn
                from rich.table import Column

                self._progress = Progress(  # one line per phase: long info is cut, never wrapped
                    TextColumn("{task.description:<15}"), BarColumn(bar_width=12),
                    TextColumn("{task.fields[info]}", table_column=Column(no_wrap=True, overflow="ellipsis")),
                    console=self.console, transient=False, refresh_per_second=4,
                )
                self._progress.start()
            self._task = self._progress.add_task(name, total=self._tasks, info="starting")
        self._stop.clear()
        self._thread = threading.Thread(target=self._poll, name="assay-progress", daemon=True)
        self._thread.start()

    def _join(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None

    def finish(self) -> None:
        self._join()
        name = self.current
        skipped = self._base.tasks_done >= self._tasks
        info = "already complete (skipped)" if skipped else self._info(final=True)
        if self._last.documents:
            self._docs_seen = self._last.documents
        self.finished.append(name)
        self.current = None
        if not self.enabled:
            return
        if self._progress is not None:
            self._progress.update(self._task, completed=self._tasks, info=info)
        else:
            self.console.print(f"{name:<15} {info}", highlight=False, markup=False)

    def running_tasks(self) -> tuple[int, int] | None:
        """(finished, total) tasks of the phase running now, if any."""
        if self.current is None:
            return None
        return read_snapshot(self._logs).tasks_done, self._tasks

    def close(self) -> None:
        self._join()
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
