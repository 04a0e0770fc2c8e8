"""Settings of the executors a recipe can name (``executor: {kind: local | slurm | ray, ...}``): pydantic models,
validated when a run is built. A module of their own so that the processes that run tasks (a local pool's
workers) need not import pydantic: they unpickle an executor, which holds none of these
(``executors.AssayLocalExecutor.__getstate__``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field



class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LocalSettings(_Settings):
    """Settings of the local executor (datatrove ``LocalPipelineExecutor``)."""

    kind: Literal["local"] = "local"
    start_method: Literal["forkserver", "spawn", "fork"] = Field(
        "forkserver", description="multiprocessing start method of the worker pool"
    )
    randomize_start_duration: int = Field(0, ge=0, description="max seconds of random delay before each task")
    inline_max_input_mb: float = Field(
        8.0, ge=0,
        description="a phase after `signals` whose run-local input (signal store, signatures) is smaller than this "
        "runs its tasks one after the other in this process (or in a child forked for the phase: inline_in_child) "
        "instead of starting a worker pool (same tasks, same outputs; saves the pool's start-up and imports: about 1 CPU-second per phase). 8 MiB of signal store "
        "is about 1,500 web pages: above it, the work outweighs a pool's start-up and the memory of a phase is "
        "better split over workers; 0 = always a pool")
    inline_in_child: bool = Field(
        True, description="a phase that runs its tasks in this process (inline_max_input_mb, or one worker) runs "
        "them in a child forked from it for the phase, where the system can fork: what the phase allocates "
        "(polars, its frames and row buffers, Arrow pages) goes away with the child instead of staying in this "
        "process, which ran the small phases one after the other and kept part of each (bench_e2e set L: "
        "launching process 216 MiB, its largest phase alone 156); a task that grew its child by "
        "executors.CHILD_RECYCLE_BYTES leaves the tasks after it to a fresh child (set O: the decide phase's "
        "second task no longer starts on what the first left); same tasks, same outputs")
    preload: bool = Field(
        True, description="the forkserver imports the modules of every phase's steps once, so workers start "
        "from it with them loaded (forkserver start method only)")


class SlurmSettings(_Settings):
    """Settings of the Slurm executor (datatrove ``SlurmPipelineExecutor``): one job array per phase."""

    kind: Literal["slurm"] = "slurm"
    partition: str | None = Field(None, description="partition; None = the cluster's default partition")
    time: str = Field("24:00:00", description="time limit per array task (sbatch --time)")
    cpus_per_task: int = Field(1, ge=1)
    mem_per_cpu_gb: float = Field(2.0, gt=0)
    qos: str | None = Field(None, description="sbatch --qos; None = cluster default")
    account: str | None = Field(None, description="sbatch --account")
    job_name: str | None = Field(None, description="job name prefix (job name: <prefix>-<phase name>)")
    sbatch_args: dict[str, str | int | float | None] = Field(
        default_factory=dict, description="extra '#SBATCH --key=value' lines (value None: flag only)"
    )
    srun_args: dict[str, str | int] = Field(default_factory=dict)
    venv_path: str | None = Field(
        None, description="venv 'activate' script sourced by each job; default: the venv running assay"
    )
    env_command: str | None = Field(None, description="shell line run before the task (replaces venv_path)")
    max_array_size: int = Field(1001, description="cluster MaxArraySize; bigger phases are split")
    tasks_per_job: int = Field(1, ge=1, description="datatrove tasks run one after the other per array task")
    requeue: bool = True
    logs_dir: str | None = Field(None, description="raw slurm logs; default <logging_dir>/slurm_logs")
    wait: bool = Field(True, description="block until the chain has finished (poll squeue)")
    poll_interval_s: float = Field(5.0, gt=0)
    timeout_s: float | None = Field(None, description="give up waiting (jobs keep running) after this many seconds")


class RaySettings(_Settings):
    """Settings of the Ray executor (datatrove ``RayPipelineExecutor``)."""

    kind: Literal["ray"] = "ray"
    address: str | None = Field(
        None,
        description="cluster to join: 'auto' (a `ray start` cluster on this machine), 'ray://host:10001', "
        "'host:6379'; None = start a private local Ray instance for the run",
    )
    num_cpus: int | None = Field(None, ge=1, description="CPUs of the private local instance (address=None)")
    cpus_per_task: float = Field(1, gt=0)
    mem_per_cpu_gb: float = Field(2.0, gt=0)
    gpus_per_task: float = Field(0, ge=0)
    tasks_per_job: int = Field(1, ge=1)
    time_limit_s: int | None = Field(None, description="kill a task after this many seconds")
    runtime_env: dict[str, Any] | None = Field(None, description="ray.init runtime_env (remote clusters)")
    ray_remote_kwargs: dict[str, Any] = Field(default_factory=dict)
    shutdown: bool = Field(True, description="shut down the Ray connection this run opened when it ends")


_SETTINGS: dict[str, type[_Settings]] = {"local": LocalSettings, "slurm": SlurmSettings, "ray": RaySettings}


def settings_model(kind: str) -> type[_Settings]:
    """The settings class of an executor kind."""
    try:
        return _SETTINGS[kind]
    except KeyError:
        raise ValueError(f"unknown executor {kind!r}; choose one of {', '.join(_SETTINGS)}") from None


def validate_settings(kind: str, settings: dict | BaseModel | None = None) -> _Settings:
    """Validate ``settings`` (a dict from a recipe, or a settings object) for ``kind``."""
    model = settings_model(kind)
    if settings is None:
        return model()
    if isinstance(settings, BaseModel):
        if not isinstance(settings, model):
            raise ValueError(f"settings of type {type(settings).__name__} given for executor {kind!r}")
        return settings
    data = dict(settings)
    if data.get("kind", kind) != kind:
        raise ValueError(f"settings for executor {data['kind']!r} given for executor {kind!r}")
    return model.model_validate(data)
