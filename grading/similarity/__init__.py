"""`make similarity ASSIGNMENT=A`: how alike the students' answers are, pair by pair (copydetect, MOSS's winnowing).

Entry point: `python -m grading.similarity`. Each student's answer cells and added cells are taken from their
notebook (extract.py), the release notebook's own code (provided cells, answer skeletons, checks) is boilerplate, and
copydetect compares every pair: reports/<a>/similarity.html (its report) and similarity.csv (pairs ranked by
similarity, both directions). Both hold student code: reports/ is git-ignored and names students by id only.
A high score says two notebooks share code the release did not give them; it does not say who copied, or that
anyone did (docs/instructors.md).
"""
from .ranking import compare

__all__ = ["compare"]
