"""verifiers (0.4, the v1 API) tasksets over vhdplay environments.

    vf-eval integrations.vf.catalog  --env.taskset.where "family = 'knapsack'" --env.taskset.mode hidden ...
    vf-eval integrations.vf.endless  --env.taskset.families knapsack,lp --env.taskset.tier hard ...

A task is one environment in one mode; its toolset (`integrations.vf.toolset`) is started per rollout, lists the
environment's tools dynamically (as verifiers' NeMo Gym taskset does) and holds that rollout's own Environment; the
reward is the environment's score, replayed from the rollout's calls; the metrics are u, turns and errors.
"""
