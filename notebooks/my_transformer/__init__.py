"""Your own Transformer parts, saved from the notebooks by ``%%my_part`` (see course_lib.student.magic)."""
