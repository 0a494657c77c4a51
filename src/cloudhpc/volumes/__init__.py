"""Data volumes on the local disks of a cluster's hosts (seed 003's GlusterFS volumes).

manage.py: a volume's manifest, create and remove with rollback, the hosts' data services, on an
emulated cluster; remote.py: the same on real machines over ssh; dataserve.py: a host's HTTP
range server; read.py: a rank's reader (local pread or ranged GET, every byte CRC-checked);
partial.py: a create's hidden copies. Placement (cloudhpc.placement) plans ranks next to them.
"""
