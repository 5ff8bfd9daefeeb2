"""JupyterHub for the course: each student's server is JupyterLab with nbgrader's Assignment List, on the course's
environment (docs/instructors.md, "On a JupyterHub"). Start it as root from the course folder:
`jupyterhub -f hub/jupyterhub_config.py`.

Set by environment variables, so that one file serves the course machine and the test (tests/test_hub.py):
COURSE_PYTHON, the course environment's Python, which every student must be able to run (default
/opt/course/bin/python); COURSE_EXCHANGE, nbgrader's exchange (default nbgrader's own /srv/nbgrader/exchange); HUB_URL,
where the hub listens (default http://127.0.0.1:8000: put a TLS proxy in front, or set it to https:// with
c.JupyterHub.ssl_cert and ssl_key). Authentication is left at JupyterHub's default (PAM: the machine's own users).
"""
import os
import tomllib
from pathlib import Path

c = get_config()  # noqa: F821 -- injected by traitlets when it loads this file

HUB = Path(__file__).resolve().parent
# course.toml read here as nbgrader_config.py reads it: the hub may start where the course package is not importable
with open(HUB.parent / "course.toml", "rb") as registry:
    COURSE_ID = tomllib.load(registry)["course"]["id"]

c.JupyterHub.bind_url = os.environ.get("HUB_URL", "http://127.0.0.1:8000")
# Each student's server runs as their own Unix user (LocalProcessSpawner), in their home folder.
c.Spawner.cmd = [os.environ.get("COURSE_PYTHON", "/opt/course/bin/python"), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
# hub/student/ holds what every student's server reads: nbgrader's course and exchange (nbgrader_config.py) and the
# instructor's nbgrader panels turned off (jupyter_server_config.json, labconfig/page_config.json).
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": str(HUB / "student"),
    "COURSE_ID": COURSE_ID,
    "COURSE_EXCHANGE": os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange"),
}
