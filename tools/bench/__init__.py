"""The bench: measured performance of each assignment's reference answers (`make bench`).

runner.py is the command line and defines what an assignment's bench module, tools/bench/<assignment>.py, provides;
goals.py, timing.py, training.py and scaling.py are the measurements the assignments share; figures.py writes
their plots.
"""
