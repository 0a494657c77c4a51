# Two commands from a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAP_VENV := benchmarks/.venv-extrap

# Debian packages the tests use: iproute2 (ip, tc) for the emulated cluster (tests/test_cluster.py;
# its tests are skipped without root); binutils (addr2line) resolves profile call sites to
# file:line (gcc brings it too); chromium and chromium-driver open `cloudhpc report`'s page in
# tests/test_report.py (selenium drives Debian's browser: no browser is downloaded). util-linux
# (unshare) and bash are essential packages. slurm-wlm (slurmctld, slurmd, the client commands,
# the pmi2 and pmix plugins) and munge run the one-node Slurm of the Slurm tests
# (cloudhpc.slurm.local, tests/test_slurm*.py), which starts its own daemons on private files and
# ports; libpmix-dev has the libpmix.so that Slurm's pmix plugin loads.
DEB_PACKAGES := iproute2 binutils chromium chromium-driver slurm-wlm munge libpmix-dev
# Debian packages the benchmarks compare with: velvet (assemble_velvet.py); gfortran, mpich and
# libmpich-dev build the reference NPB (npb_mops.py, profiler_vs_mpip.py) and mpiP against
# Debian's MPICH; g++ builds IMB (build-imb.sh, middlewares.py); a Java runtime runs PySpark (kmeans_*.py);
# Maven and a Java 17 JDK build the Hadoop and Giraph peers (benchmarks/peers/hadoop, seed_peers.py).
# mpiP is built without libunwind and libbfd (build-mpip.sh), so it needs neither. libsimgrid-dev
# is SimGrid with SMPI (smpicc, smpiff, smpirun): predict_scale.py simulates the reference NPB on
# a platform calibrated from cloudhpc's curves (benchmarks/_smpi.py).
# `make bench` installs them with apt-get's own progress; no benchmark script installs anything.
BENCH_DEB_PACKAGES := velvet gfortran mpich libmpich-dev g++ default-jre-headless maven openjdk-17-jdk-headless libsimgrid-dev

# Installing munge and slurm-wlm would start their daemons with Debian's default configuration
# (invoke-rc.d, deb-systemd-invoke): a policy-rc.d that says no (exit 101) stops that while apt
# runs, and is removed after it (one already there is left as it is).
NO_SERVICES := if [ ! -e /usr/sbin/policy-rc.d ]; then \
	  printf '\043!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && \
	  trap 'rm -f /usr/sbin/policy-rc.d' EXIT; fi;

.PHONY: demo test lint format bench clean deb-packages mpi-implementations slurm-demo

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --progress-bar on -e '.[test]'   # its progress shows: minutes on a fresh machine
	@# byte-compile cloudhpc's own source once: with PYTHONDONTWRITEBYTECODE set (as in some
	@# shells) every command would otherwise compile it again (40-65 ms of start-up)
	$(BIN)/python -m compileall -q src
	touch $(STAMP)

# `cloudhpc jit build` compiles every kernel into numba's cache first (1-3 min the first time,
# with progress), so that no later run waits for the compiler.
demo: $(STAMP)
	$(BIN)/cloudhpc jit build
	$(BIN)/cloudhpc demo

deb-packages:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    $(NO_SERVICES) apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "Debian packages missing: $$missing (their tests are skipped)"; fi; \
	fi

# Open MPI and Intel MPI from PyPI, each in a prefix of its own (tests run every command on all
# three MPI implementations); a no-op once installed (cloudhpc mpi list shows where).
mpi-implementations: $(STAMP)
	$(BIN)/cloudhpc mpi install --all

test: $(STAMP) deb-packages mpi-implementations
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest -q

# A one-node Slurm on this machine (docs/slurm.md; root): installs slurm-wlm and munge as `make
# test` does, starts it (kept until `cloudhpc slurm down`), and runs a pingpong in an allocation.
slurm-demo: $(STAMP) deb-packages
	$(BIN)/cloudhpc slurm up >/dev/null
	eval "$$($(BIN)/cloudhpc slurm up 2>/dev/null)" && salloc -n 2 $(BIN)/cloudhpc bench pingpong --sizes 0:1k
	@echo '== it keeps running: eval "$$($(BIN)/cloudhpc slurm up)" in your shell to use it; $(BIN)/cloudhpc slurm down stops it'

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(STAMP)
	@echo "== Python peers: pyspark, dask, scikit-learn, networkx, python-graphblas (the bench extra)"
	$(BIN)/pip install --progress-bar on -e '.[test,bench]'
	@echo "== Debian peers: $(BENCH_DEB_PACKAGES)"
	@missing=$$(for p in $(BENCH_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "all installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else echo "missing: $$missing; as root: apt-get install $$missing" >&2; exit 1; fi
	@echo "== MPI implementations: Open MPI and Intel MPI from PyPI (benchmarks/middlewares.py)"
	$(BIN)/cloudhpc mpi install --all
	@echo "== Java peers: Hadoop 3.4.1 MapReduce and Giraph 1.3.0 (benchmarks/seed_peers.py), built by"
	@echo "   Maven; slow the first time (about 300 MB of jars from Maven Central), seconds after"
	mvn -B -f benchmarks/peers/hadoop/pom.xml package
	@echo "== Extra-P 4.2.5 (benchmarks/scaling_models.py), in a venv of its own: it pins numpy < 2"
	@echo "   and PySide6, so it is never a dependency of cloudhpc"
	test -x $(EXTRAP_VENV)/bin/extrap || ($(PYTHON) -m venv $(EXTRAP_VENV) && \
	  $(EXTRAP_VENV)/bin/pip install --progress-bar on "extrap==4.2.5")
	@echo "== ready: .venv/bin/python benchmarks/NAME.py --help (results in benchmarks/runs/)"

clean:
	rm -rf $(VENV) $(EXTRAP_VENV) cloudhpc-results
