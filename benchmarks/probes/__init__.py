"""Probes: what bounds a goal row (a floor, a count, a split), with no goal of their own.

See ``benchmarks/README.md``. A full ``benchmarks.run_all`` runs three of them
(the pages a SQLite write commits, the SQLite insert's floor and the
PostgreSQL writes' floor) so that each result file keeps those floors beside
the goal rows they bound.
"""
