"""Campaigns: a file of workloads and a matrix of launch options, run as the matrix's product
times its repetitions, interleaved and resumable (`cloudhpc campaign run|status FILE.toml`).

spec.py reads and checks the file; plan.py turns it into every run, each workload's command
read by the command line's own parser (handed in: the parser is cli's); runner.py runs the
missing ones through a CellRunner (LocalRunner: launch/execute.py) and says where a campaign
stands. Records carry `campaign: {name, cell, workload, repetition, run}` (results/campaigns.py).
"""
