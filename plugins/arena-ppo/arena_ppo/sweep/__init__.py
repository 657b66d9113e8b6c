"""``arena sweep ppo SPACE.yaml``: a hyperparameter search of the PPO trainer's settings over seeds, on Optuna.

A trial trains the same settings on several seeds (one ``arena train`` process of one thread each, a
few at a time), scores each seed's best.pt in fresh games and combines the seeds' scores into the
trial's objective (the worst seed by default). Optuna's TPE sampler proposes the settings and its
median pruner stops a trial whose seeds' evaluations fall behind; the study lives in
``DIR/study.db`` (SQLite), so a stopped sweep resumes and several sweep processes share it.

The pieces: :mod:`.space` reads the search space, :mod:`.runs` starts and watches the seeds' processes
(:mod:`.job` is what each runs, :mod:`.score` how it scores), :mod:`.study` holds the search,
:mod:`.report` prints and writes what it found, :mod:`.confirm` re-checks the chosen settings on new
seeds, and :mod:`.cli` is the command line. Only :mod:`.cli` is imported to list the commands; Optuna
and torch load when a sweep starts.
"""
