"""Instructor-side course definition: the registry of assignments (course.toml) and the reference answers.

Never shipped to students (pyproject's packages are course_lib and checkers only). Both grading/ and tools/
import from here; this package imports neither.
"""
