"""Imported by the grader's fork server only (``grading.cli.WORKER_PRELOAD``): the fork server
gets SIGKILL when the grader ends, SIGKILL included, and its workers die with it
(``grading.cli.die_with_parent``). Not taught."""
from .cli import die_with_parent

die_with_parent()
