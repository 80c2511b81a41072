"""The `vhd` command line: a thin layer over flows, warehouse and envs."""
