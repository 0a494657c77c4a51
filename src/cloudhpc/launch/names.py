"""The built-in launchers' names: the one place they are written (the registry in __init__.py,
each launcher's `name`, and every other module that needs one imports it from here)."""

LOCAL = "local"  # P ranks on this machine (mpiexec); also a Job's launcher when it names none
HOSTS = "hosts"  # across the machines of a hosts file, over ssh
CLUSTER = "cluster"  # on the hosts of an emulated cluster, through its hook
SLURM = "slurm"  # inside a Slurm allocation: srun, or the implementation's mpiexec through Slurm
SLURM_MPIEXEC = "slurm-mpiexec"  # inside an allocation, always the implementation's mpiexec
DIRECT = "direct"  # one process, no mpiexec (the serial engine)
RAY = "ray"  # one driver process; Ray starts the workers
