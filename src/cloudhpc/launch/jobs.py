"""A Job for a job the user names, checked before anything starts: the one path of the command
line (`run`, `bench`, `npb`, `profile --app`), campaigns and the Python API.

    from cloudhpc.launch.jobs import job_for
    job = job_for("kmeans", {"generate": True, "n": 20000, "k": 4},
                  LaunchOptions(nprocs=2, engine="mpi"))

`job_for` takes the values as the user gave them (words, TOML values or Python values, by the
names the job declares: apps/spec.py), and checks in this order, each failing with one line:
the values (params.py), the engine and its settings, the launch options (make_job), the job's
files (an output never replaces an input), its memory against this host's, its own checks
(validate) and any it makes with the Job in hand (preflight).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from typing import Any

from ..apps.registry import job_spec, known
from ..apps.spec import JobSpec
from ..errors import CloudhpcError
from ..job import Job
from ..memory import check_fits
from ..params import Params
from ..paths import check_run_files
from .checkpointing import settings_of
from .execute import RunRequest
from .names import RAY, SLURM
from .options import CHECKPOINT_OPTIONS, LAUNCH, RUNTIME, LaunchOptions, make_job


def spec_of(name: str) -> JobSpec:
    """The declaration of job `name` (a `run` app, bench.NAME or npb); one line if unknown."""
    spec = job_spec(name) if known(name) else None
    if spec is None:
        from ..apps.registry import run_apps

        raise CloudhpcError(
            f"unknown app {name!r}; known: {', '.join([*run_apps(), 'bench.NAME', 'npb'])}"
        )
    return spec


def job_for(
    name: str, values: dict[str, Any] | None, opts: LaunchOptions, *, dry_run: bool = False
) -> Job:
    """The checked Job of job `name` with the values given (None: every default)."""
    spec = spec_of(name)
    opts = replace(opts, engine_options=engine_options(spec, opts), default_np=spec.default_np)
    params = spec.job_params(values)
    if spec.prepare is not None:
        params = spec.prepare(params)
    if spec.command.startswith("run "):  # so that the app's validate can refuse a model
        params["engine"] = opts.engine
    checkpoint = settings_of(spec, params, opts)  # --checkpoint-every, --restarts, ...
    job = make_job(name, params, opts, checkpoint=checkpoint)
    if spec.run_files is not None:
        check_run_files(spec.run_files(params), job.results_dir)
    check_memory(spec, params, job)  # before validate: it may generate the data
    if spec.validate is not None:
        spec.validate(params, job.nprocs)  # before any rank starts (the ranks check again)
    if spec.preflight is not None:
        spec.preflight(params, job, opts, dry_run)
    return job


def request_for(job: Job) -> RunRequest:
    """How a command runs `job`: its progress bar's title and how its record decides the exit
    status."""
    spec = job_spec(job.app) if known(job.app) else None
    if spec is None:
        return RunRequest(job, job.app)
    title = spec.command
    if job.app == "npb":
        title = f"npb {job.params['kernel']} class {job.params['class']}"
    return RunRequest(job, title, spec.exit_code)


def engine_options(spec: JobSpec, opts: LaunchOptions) -> dict[str, Any]:
    """The engine, checked against the job, and its settings (--ray-address, --ray-token-file,
    --inject-failure), checked; refused with engines they do not apply to (--inject-failure on
    mpi and serial: for a job with checkpoints, whose models kill the rank)."""
    from ..engines.registry import ENGINES, check_available

    engine = opts.engine
    if not ENGINES.known(engine):
        raise CloudhpcError(f"unknown engine {engine!r}; known: {', '.join(ENGINES.names())}")
    if engine == "serial" and opts.nprocs not in (None, 1):
        raise CloudhpcError(f"--engine serial runs one process; got -n {opts.nprocs}")
    if spec.engines is not None and engine not in spec.engines:
        if not spec.command.startswith("run "):  # bench and npb take no --engine
            raise CloudhpcError(f"{spec.command} takes no --engine (MPI ranks), not {engine}")
        raise CloudhpcError(
            f"{spec.name} runs on --engine {' or '.join(spec.engines)}, not {engine}"
        )
    given = dict(opts.engine_options)
    ray_address = given.get("ray_address")
    token_file = given.get("ray_token_file")
    inject = given.get("inject_failure")
    if engine != "ray":
        given_ = (("--ray-address", ray_address), ("--ray-token-file", token_file))
        for flag, value in given_:
            if value is not None:
                raise CloudhpcError(f"{flag} applies to --engine ray, not {engine}")
        if inject is None:
            return {}
        if not spec.checkpoints:
            raise CloudhpcError(
                f"--inject-failure on --engine {engine} kills a rank at an iteration of an app "
                f"with checkpoints (kmeans, pagerank, components, ...); {spec.name} has none"
            )
        ckpt = opts.checkpoints or {}
        if ckpt.get("checkpoint_every") is None and ckpt.get("restart") is None:
            raise CloudhpcError(
                f"--inject-failure applies to --engine ray, or on --engine {engine} to a job "
                "with checkpoints: give --checkpoint-every K (and --restarts R to see it resume)"
            )
        return {"inject_failure": parse_injection(inject, opts.nprocs)}
    check_available("ray")
    if opts.launcher not in (None, RAY):
        raise CloudhpcError(
            f"--engine ray starts one driver process (launcher ray), not --launcher {opts.launcher}"
        )
    options: dict[str, Any] = {}
    if ray_address is not None:
        if not str(ray_address).strip():
            raise CloudhpcError("--ray-address is empty (give host:port or auto)")
        options["ray_address"] = str(ray_address).strip()
    if token_file is not None:
        if ray_address is None:
            raise CloudhpcError("--ray-token-file is for a cluster joined with --ray-address")
        from ..paths import check_input_file

        check_input_file(token_file, "--ray-token-file")
        options["ray_token_file"] = os.path.abspath(token_file)
    if inject is not None:
        options["inject_failure"] = parse_injection(inject, opts.nprocs)
    return options


def parse_injection(given: Any, nprocs: int | None) -> list[int]:
    """'ITER:WORKER' (or [ITER, WORKER]) -> [iteration >= 1, 0 <= worker < P]."""
    text = ":".join(map(str, given)) if isinstance(given, (list, tuple)) else str(given)
    try:
        iteration, worker = (int(x) for x in text.split(":"))
    except ValueError:
        raise CloudhpcError(f"--inject-failure {text!r}: expected ITER:WORKER, e.g. 2:1") from None
    workers = nprocs or 1
    if iteration < 1:
        raise CloudhpcError(f"--inject-failure {text!r}: iterations count from 1")
    if not 0 <= worker < workers:
        raise CloudhpcError(
            f"--inject-failure {text!r}: worker must be 0..{workers - 1} (-n {workers})"
        )
    return [iteration, worker]


def hosts_sharing(job: Job) -> int | None:
    """How many hosts' memory the job's ranks share: the distinct hosts of --hosts (real
    machines), the allocation's nodes under Slurm, 1 for this machine alone (a local run, or an
    emulated cluster, whose hosts share this machine's memory); None: not known here (a joined
    Ray cluster)."""
    if job.engine_options.get("ray_address"):
        return None
    if job.cluster or not job.hosts:
        if job.launcher == SLURM:
            return int(os.environ.get("SLURM_JOB_NUM_NODES") or job.layout.nodes or 1)
        return 1
    return len({h.name for h in job.hosts})


def check_memory(spec: JobSpec, params: dict[str, Any], job: Job) -> None:
    """Refuse a run whose data (the job's memory_estimate) does not fit in this host's memory
    (its share of it, when the ranks are spread over several hosts)."""
    hosts = hosts_sharing(job)
    if spec.memory_estimate is None or hosts is None:
        return
    try:
        need = int(spec.memory_estimate(params, job.nprocs))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return  # parameters validate() refuses with its own line
    check_fits(need, f"run {job.app}", hosts)


def runtime_of(spec: JobSpec) -> Params:
    """The runtime options of a `run` app: RUNTIME's, without those it declares itself, and
    the checkpoint options only for an app with checkpoints."""
    skip = () if spec.checkpoints else CHECKPOINT_OPTIONS
    return RUNTIME.without(*spec.params.names, *skip)


def command_words(name: str, values: dict[str, Any], launch: dict[str, Any]) -> list[str]:
    """The command line (after `cloudhpc`) that gives job `name` these values and launch values:
    what a record made from Python or a campaign's TOML values says it ran."""
    spec = spec_of(name)
    head = spec.command.split()
    words = spec.params.to_words(spec.params.given(values))
    if name == "npb":  # its kernel is the command's word after npb
        rest = spec.params.without("kernel").to_words(spec.params.given(values))
        words = [str(values.get("kernel", "")).lower(), *rest]
    launch_words = LAUNCH.to_words(LAUNCH.given({k: v for k, v in launch.items() if k in LAUNCH}))
    runtime = {k: v for k, v in launch.items() if k in RUNTIME}
    if head[0] == "run":
        launch_words = RUNTIME.to_words(RUNTIME.given(runtime)) + launch_words
    return [*head, *words, *launch_words]


def command_line(name: str, values: dict[str, Any], launch: dict[str, Any]) -> str:
    return shlex.join(["cloudhpc", *command_words(name, values, launch)])


# the commands that run one job: `run APP`, `bench NAME`, `npb KERNEL`
COMMANDS = ("run", "bench", "npb")


def read_command(words: list[str]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A command line (after `cloudhpc`) that runs one job, read by its declaration: (the job's
    name, its values, the launch values given), as `job_for` and LaunchOptions.from_values take
    them; ParamError or CloudhpcError (one line) for words it does not take. The command line's
    own options (--results, --json, --dry-run, --submit) are not read here."""
    from ..apps.spec import WordsParser

    head, rest = (words[0], list(words[1:])) if words else ("", [])
    if head not in COMMANDS:
        raise CloudhpcError(f"`{head}` is not a command that runs a job (one of: "
                            f"{', '.join(COMMANDS)})")  # fmt: skip
    if head == "npb":
        name = "npb"
    else:
        sub = next((w for w in rest if not w.startswith("-")), None)
        if sub is None:
            raise CloudhpcError(f"`{head}` needs the {'app' if head == 'run' else 'benchmark'}")
        rest.remove(sub)
        name = sub if head == "run" else f"bench.{sub}"
        if head == "bench" and job_spec(name) is None:
            from ..bench.params import KINDS

            raise CloudhpcError(f"unknown benchmark {sub!r}; known: {', '.join([*KINDS, 'ior'])}")
    spec = spec_of(name)
    parser = WordsParser(prog=f"cloudhpc {spec.command}", add_help=False)
    groups = spec.add_arguments(parser)
    if head == "run":
        runtime_of(spec).add_arguments(parser, groups)
    LAUNCH.add_arguments(parser)
    ns = parser.parse_args(rest)
    values = spec.params.from_namespace(ns)
    if name == "npb" and str(values.get("kernel", "")).lower() == "all":
        raise CloudhpcError(f"npb all runs {len(_npb_kernels())} jobs; a workload is one run "
                            f"(name one kernel: {', '.join(_npb_kernels())})")  # fmt: skip
    return name, values, {**LAUNCH.from_namespace(ns), **RUNTIME.from_namespace(ns)}


def _npb_kernels() -> list[str]:
    from ..npb import KERNELS

    return list(KERNELS)
