"""``python -m course_lib.exercises.grade``: the class grader's former name, kept working.

The grader lives in ``course_lib.grading`` (``python -m course_lib.grading``); this runs it.
"""
import sys

from ..grading.cli import main

if __name__ == "__main__":
    sys.exit(main())
