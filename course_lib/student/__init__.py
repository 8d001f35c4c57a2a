"""The student's side of the course: their own parts, checked, assembled, traced and debugged.

* :mod:`~course_lib.student.contracts`: what each of the ten parts must be (shapes, dtypes, masks), checked
  on small random inputs;
* :mod:`~course_lib.student.package`: the student's package ``my_transformer/``, saving a part and the one
  fresh importer (:func:`~course_lib.student.package.load_my_parts`);
* :mod:`~course_lib.student.magic`: the ``%%my_part`` cell magic (``%load_ext course_lib.student``);
* :mod:`~course_lib.student.assembly`: :func:`~course_lib.student.assembly.build_transformer`, the course
  model with the student's parts (contracts checked first);
* :mod:`~course_lib.student.compare`: each part against its course_lib twin, number for number;
* :mod:`~course_lib.student.bug_finder`: :func:`~course_lib.student.bug_finder.find_my_bug`, which part is
  wrong and why;
* :mod:`~course_lib.student.ownership`: whose code runs in the student's model.

The model itself is the course's one ``course_lib.model.Transformer(config, parts)``.
"""


def load_ipython_extension(ipython) -> None:
    """Register ``%%my_part`` for ``%load_ext course_lib.student``."""
    from .magic import load_ipython_extension as register

    register(ipython)
