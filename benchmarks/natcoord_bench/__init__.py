"""Experiments behind ``natcoord bench``: each module has ``configure(parser)``
and ``run(args)`` for the command line, and writes CSV to ``data/``."""
