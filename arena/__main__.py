"""``python -m arena``: the ``arena`` command, for launchers that start modules
(``torchrun --nproc-per-node N -m arena train ppo …``)."""

from arena.cli import main

if __name__ == "__main__":
    main(prog_name="arena")
