"""SimGrid SMPI as the peer of cloudhpc's predictions at scale (issue 33, item 5): the reference
NPB 3.4 kernels built with SMPI's compilers (smpicc, smpiff), a SimGrid platform calibrated from a
cloudhpc platform file (the same measured curves and compute probe cloudhpc predicts from), and
smpirun. Used by predict_scale.py; needs Debian's libsimgrid-dev (`make bench` installs it).

Calibration, as SimGrid's procedure for SMPI (a nominal latency and bandwidth, then piecewise
factors by message size so that the simulated ping-pong follows the measured one):

- one host per rank, each with its own link to a backbone of unlimited bandwidth (SimGrid's
  `<cluster>`): a message crosses two links, each with half the one-way latency L;
- L is the ping-pong's time at its smallest size; the nominal bandwidth B its slope between its
  two largest sizes (bytes over the time they add);
- `smpi/bw-factor`: at each measured size s >= the first, s / (B (t(s) - L)), so that a message
  of that size takes t(s) (L + s / (B f)); `smpi/lat-factor` is 1;
- host speed: SMPI times each compute burst on this machine and scales it by
  `smpi/host-speed` / the host's speed; the hosts' speed is this machine's times the ratio of
  the compute probes (here / the platform's: 1 for a platform of this machine);
- collectives: `smpi/coll-selector:mpich` (MPICH's selection, as cloudhpc's extrapolation).

SMPI runs every rank's computation for real, one at a time, in one process: 64 ranks of a
kernel take about the kernel's serial time and each rank's memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import require_program

REFERENCE = Path("/work/shared/reference/NPB3.4-MPI")
HOST_SPEED = 1e9  # flop/s this machine is declared to run at (the unit is arbitrary)
_TIME = re.compile(r"Time in seconds\s*=\s*([\d.]+)")
_OK = re.compile(r"Verification\s*=\s*SUCCESSFUL")
_SIMULATED = re.compile(r"[Ss]imulated time[^\d]*([\d.]+(?:e[-+]?\d+)?)")


def require_smpi() -> None:
    for program in ("smpicc", "smpiff", "smpirun"):
        require_program(program, "SimGrid SMPI (Debian's libsimgrid-dev)", "--no-smpi")


def version() -> str:
    r = subprocess.run(["smpirun", "-version"], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr) else "?"


def cached_build(kernel: str, cls: str, source: Path = REFERENCE) -> Path:
    """build() into the user's cache (~/.cache/cloudhpc/npb-smpi/<sources, SMPI>/), kept for
    the next run: a build of the four kernels takes minutes, a simulation seconds."""
    from npb_mops import CACHE

    key = hashlib.sha256(f"{version()}\n".encode() + Path(__file__).read_bytes())
    for f in sorted(p for p in source.rglob("*") if p.is_file()):
        key.update(str(f.relative_to(source)).encode())
        key.update(f.read_bytes())
    out = CACHE.parent / "npb-smpi" / key.hexdigest()[:16]
    binary = out / "bin" / f"{kernel}.{cls}.x"
    if binary.is_file():
        return binary
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{kernel}.{cls}.", dir=out))
    try:  # built aside, then moved in whole: an interrupted build leaves no binary behind
        built = build(kernel, cls, work, source)
        (out / "bin").mkdir(exist_ok=True)
        os.replace(built, binary)
    except SystemExit:  # the failed build's log stays, where the message says
        log = out / f"build-{kernel}-{cls}.log"
        os.replace(work / log.name, log)
        raise SystemExit(f"SMPI build of {kernel} class {cls} failed: {log}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return binary


def build(kernel: str, cls: str, out: Path, source: Path = REFERENCE) -> Path:
    """The reference kernel built with SMPI's compilers into out/bin; the timer's line printed
    with microseconds (the suite prints hundredths: a simulated class A run is 0.05 s)."""
    binary = out / "bin" / f"{kernel}.{cls}.x"
    if binary.is_file():
        return binary
    src = out / "src"
    if not src.is_dir():
        shutil.copytree(source, src)
        mk = (src / "config" / "make.def.template").read_text()
        mk = re.sub(r"(?m)^MPIFC\s*=.*$", "MPIFC = smpiff", mk)
        mk = re.sub(r"(?m)^MPICC\s*=.*$", "MPICC = smpicc", mk)
        # smpiff rejects randi8.f's X'...' constants that mpif90 takes: the same value as Z'...'
        flags = "-O3 -fallow-argument-mismatch -fallow-invalid-boz"
        mk = re.sub(r"(?m)^FFLAGS\s*=.*$", f"FFLAGS = {flags}", mk)
        (src / "config" / "make.def").write_text(mk)
        c = src / "common" / "c_print_results.c"
        c.write_text(c.read_text().replace("Time in seconds =             %12.2f",
                                           "Time in seconds =             %12.6f"))  # fmt: skip
        f = src / "common" / "print_results.f"
        f.write_text(f.read_text().replace("12x, f12.2)", "12x, f12.6)"))
        (src / "bin").mkdir(exist_ok=True)
    log = out / f"build-{kernel}-{cls}.log"
    with open(log, "w") as fh:
        r = subprocess.run(["make", kernel, f"CLASS={cls}"], cwd=src, stdout=fh, stderr=fh)
    if r.returncode != 0:
        raise SystemExit(f"SMPI build of {kernel} class {cls} failed: {log}")
    (out / "bin").mkdir(exist_ok=True)
    shutil.copy2(src / "bin" / binary.name, binary)
    return binary


def calibration(platform: dict, nprocs: int | None = None) -> dict:
    """L, B and the bandwidth factors from a cloudhpc platform file's ping-pong curve (its
    smallest measured P when nprocs is None)."""
    curves = platform["curves"]
    p = str(nprocs) if nprocs is not None else str(min(int(k) for k in curves))
    rows = sorted(
        ((r["bytes"], r["t_median_usec"] * 1e-6) for r in curves[p]["rows"]
         if r["op"] == "pingpong"),
    )  # fmt: skip
    rows = [(s, t) for s, t in rows if t > 0]
    if len(rows) < 3:
        raise SystemExit("the platform has fewer than 3 ping-pong sizes: measure it again")
    lat = rows[0][1]
    (s1, t1), (s2, t2) = rows[-2], rows[-1]
    bw = (s2 - s1) / max(t2 - t1, 1e-12)
    factors = []
    for s, t in rows[1:]:
        f = s / (bw * max(t - lat, 1e-9))
        factors.append((s, min(max(f, 0.01), 10.0)))
    first = factors[0][1]
    spec = ";".join([f"0:{first:.6g}"] + [f"{s}:{f:.6g}" for s, f in factors])
    # a size over 10x what the latency and the large-message bandwidth give: the partner was
    # off its core (a loaded machine), which the calibration carries into every such message
    slow = [s for s, t in rows if t > 10 * (lat + s / bw)]
    return {"latency_s": lat, "bandwidth_Bps": bw, "bw_factor": spec, "points": rows,
            "slower_than_larger": slow}  # fmt: skip


def write_platform(path: Path, nhosts: int, cal: dict, speed: float) -> Path:
    """A SimGrid cluster of `nhosts` one-core hosts, links of half the one-way latency each."""
    xml = f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="calibrated" prefix="node-" suffix="" radical="0-{nhosts - 1}" speed="{speed:.6g}f"
           bw="{cal["bandwidth_Bps"]:.6g}Bps" lat="{cal["latency_s"] / 2:.6g}s"
           bb_bw="{cal["bandwidth_Bps"] * 1e4:.6g}Bps" bb_lat="0s" sharing_policy="SPLITDUPLEX"/>
</platform>
"""
    path.write_text(xml)
    path.with_suffix(".hosts").write_text("".join(f"node-{i}\n" for i in range(nhosts)))
    return path


def simulate(binary: Path, nprocs: int, xml: Path, cal: dict, workdir: Path) -> dict:
    """smpirun of the binary on the platform: the kernel's own timer (simulated) and SimGrid's
    simulated end; the wall time the simulation took."""
    cmd = ["smpirun", "-np", str(nprocs), "-platform", str(xml), "-hostfile",
           str(xml.with_suffix(".hosts")), f"--cfg=smpi/host-speed:{HOST_SPEED:g}f",
           "--cfg=smpi/coll-selector:mpich", f"--cfg=smpi/bw-factor:{cal['bw_factor']}",
           "--cfg=smpi/lat-factor:0:1", "--cfg=smpi/display-timing:yes",
           "--log=xbt_cfg.thres:warning", "--log=smpi_coll.thres:warning",
           str(binary)]  # fmt: skip
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, start_new_session=True)
    wall = time.monotonic() - start
    text = r.stdout + r.stderr
    secs = _TIME.search(r.stdout)
    if r.returncode != 0 or not secs or not _OK.search(r.stdout):
        raise SystemExit(f"smpirun {binary.name} -np {nprocs} failed:\n{text[-3000:]}")
    sim = _SIMULATED.search(text)
    return {
        "time_s": float(secs.group(1)),
        "simulated_end_s": float(sim.group(1)) if sim else None,
        "wall_s": wall,
        "command": " ".join(cmd),
    }


def platform_speed(platform: dict, here_probe: float | None) -> float:
    """The simulated hosts' speed: this machine's, scaled by the probes (here / the platform's)."""
    theirs = platform.get("compute_probe_s")
    if not here_probe or not theirs:
        return HOST_SPEED
    return HOST_SPEED * here_probe / theirs


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())
