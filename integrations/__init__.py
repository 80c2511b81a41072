"""The catalog in the trainers teams already use: verifiers (a v1 Taskset), OpenEnv (a server), TRL (an environment
class) and trainer-ready datasets (`vhd export --format trl|skyrl|hf`).

Each trainer's package is an extra (`pip install 'vhdplay[verifiers]'`, `[openenv]`, `[trl]`); nothing here imports
one at module level, so the core install stays light.
"""
