"""nbgrader as every student's server sees it: the course and its exchange (set by hub/jupyterhub_config.py)."""
import os

c = get_config()  # noqa: F821 -- injected by traitlets when it loads this file

c.CourseDirectory.course_id = os.environ["COURSE_ID"]
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
