"""Shared test set-up: one torch thread (COURSE_NUM_THREADS overrides), as in the notebooks and CI.

On a 2-core machine two threads make the suite slower whenever anything else is running.
"""

from course_lib.utils import configure_threads

configure_threads()
