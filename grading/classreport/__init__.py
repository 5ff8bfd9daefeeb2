"""`make report ASSIGNMENT=A`: what the class got wrong, from the grading's record (reports/<a>/graded.json).

tables.py reads the record and counts (scores, pass rates, named mistakes, tasks failed together, grading times);
figures.py draws them as PNG; page.py writes reports/<a>/class_report.html (one self-contained file) and
reports/<a>/diagnoses.csv. Neither names a student: every figure and table counts the class.
"""
