"""``python -m course_lib.grading``: grade a class (``grading.cli``)."""
import sys

from .cli import main

sys.exit(main())
