"""The play table: play *6 nimmt!* against any agents, watch agents play, or replay a recorded game (issue 14).

``python -m sixnimmt_env.play`` starts a local web server and opens the table in the browser; ``--tui`` plays in
the terminal instead. See :mod:`sixnimmt_env.play.__main__` for the options.

- :mod:`sixnimmt_env.play.table`: one game (:class:`~sixnimmt_env.play.table.Table`), free of web code: every
  decision through the engine, stale requests refused, each turn told card by card.
- :mod:`sixnimmt_env.play.coach`: the coach, the ``mc:N`` search's expected score of every card or row.
- :mod:`sixnimmt_env.play.server`: the Starlette app and its JSON API; the page lives in ``static/``.
- :mod:`sixnimmt_env.play.saved`: every game saved as it is played (SQLite), and continued after a restart.
- :mod:`sixnimmt_env.play.history`: the person's games, record per opponent and export (issue 39).
- :mod:`sixnimmt_env.play.guard`: only the table's own page may drive the API.
- :mod:`sixnimmt_env.play.tui`: the terminal mode (Textual).

Needs the ``play`` extra (``pip install 'sixnimmt[play]'``; ``make install`` includes it).
"""
