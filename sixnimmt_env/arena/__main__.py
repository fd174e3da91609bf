"""``python -m sixnimmt_env.arena``: the arena's command line (:func:`sixnimmt_env.arena.cli.main`)."""

from sixnimmt_env.arena.cli import main

main()
