"""``assay._deferred``: datatrove.io is imported without huggingface_hub's file system client, and behaves the same:
its ``isinstance(fs, HfFileSystem)`` test and ``cached_assets_path`` give what the real objects give."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str, tmp_path) -> str:
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_datatrove_io_loads_without_the_hub_file_system_and_tests_types_as_before(tmp_path):
    out = _run("""
        import sys
        import assay.pipeline.executors  # datatrove's executors: datatrove.io
        import datatrove.io as io
        import fsspec
        import huggingface_hub
        print("loaded", "huggingface_hub.hf_file_system" in sys.modules)
        print("hub namespace untouched", "HfFileSystem" not in vars(huggingface_hub))
        print("local", isinstance(fsspec.filesystem("file"), io.HfFileSystem))
        from huggingface_hub import HfFileSystem  # the real class, loaded now
        fs = HfFileSystem()
        print("hub", isinstance(fs, io.HfFileSystem), isinstance(fs, HfFileSystem), io._get_true_fs(fs) is fs)
        print("assets", io.cached_assets_path(library_name="datatrove", namespace="t", subfolder="s")
              == huggingface_hub.cached_assets_path(library_name="datatrove", namespace="t", subfolder="s"))
        """, tmp_path)
    assert out.split("\n")[:5] == ["loaded False", "hub namespace untouched True", "local False", "hub True True True",
                                   "assets True"]


def test_nothing_deferred_when_the_hub_file_system_came_first(tmp_path):
    out = _run("""
        import huggingface_hub.hf_file_system
        import assay.pipeline.executors
        import datatrove.io as io
        print(io.HfFileSystem is huggingface_hub.hf_file_system.HfFileSystem)
        """, tmp_path)
    assert out.strip() == "True"


def test_datatrove_writers_load_without_the_hub_client_and_give_the_real_classes_on_use(tmp_path):
    """datatrove's writers and filters (every step module of a run imports them) load without
    ``datatrove.pipeline.writers.huggingface`` and the Hub client it imports; its names are the real class
    and module when used: attribute, ``from ... import``, subclassing, ``import ... .huggingface``."""
    out = _run("""
        import sys
        import assay.pipeline.executors
        import datatrove.pipeline.filters  # imports datatrove.pipeline.writers
        import datatrove.pipeline.writers as w
        print("deferred", "datatrove.pipeline.writers.huggingface" not in sys.modules,
              "huggingface_hub.hf_api" not in sys.modules, w.JsonlWriter.__module__)
        from datatrove.pipeline.writers import HuggingFaceDatasetWriter
        import datatrove.pipeline.writers.huggingface as real
        print("real", HuggingFaceDatasetWriter is real.HuggingFaceDatasetWriter,
              w.HuggingFaceBucketWriter is real.HuggingFaceBucketWriter, w.huggingface is real)
        class Mine(HuggingFaceDatasetWriter):
            pass
        print("subclass", issubclass(Mine, real.ParquetWriter))
        try:
            w.NoSuchWriter
        except AttributeError as e:
            print("missing", "NoSuchWriter" in str(e))
        """, tmp_path)
    assert out.split("\n")[:4] == ["deferred True True datatrove.pipeline.writers.jsonl", "real True True True",
                                    "subclass True", "missing True"]


def test_hub_writers_imported_first_are_left_as_they_are(tmp_path):
    out = _run("""
        import datatrove.pipeline.writers.huggingface as real
        import assay.pipeline.executors
        import datatrove.pipeline.writers as w
        print(w.HuggingFaceDatasetWriter is real.HuggingFaceDatasetWriter, "__getattr__" not in vars(w))
        """, tmp_path)
    assert out.strip() == "True True"
