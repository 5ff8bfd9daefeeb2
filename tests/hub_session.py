"""A JupyterHub of the test's own (tests/test_hub.py): Unix users, the course's hub config under a test overlay, and a
student's session through the hub's REST API and their own server's (nbgrader's assignment API, contents, kernels).

Nothing here knows an assignment: the test names it.
"""
import contextlib
import http.cookiejar
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from course_paths import ROOT
from kernel_client import run_cells

HUB_CONFIG = ROOT / "hub" / "jupyterhub_config.py"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # a Python every user may run (the checkout's may sit under /root)
PROXY = shutil.which("configurable-http-proxy")
STARTUP = 180  # seconds a hub or a student's server may take to answer: a runaway bound, not a speed requirement


def missing():
    """Why a hub cannot be run here (None: it can), naming what installs the part that is missing."""
    if os.geteuid() != 0:
        return "needs root, to create Unix users and spawn their servers"
    if shutil.which("useradd") is None:
        return "needs useradd (apt-get install passwd)"
    if not SYSTEM_PYTHON.is_file():
        return "needs a Python every user can run (apt-get install python3)"
    if PROXY is None:
        return "needs JupyterHub's proxy (apt-get install npm && npm install -g configurable-http-proxy; .ci/run does)"
    return None


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ----- What the students' servers run on -------------------------------------------------------------------------

def student_python(folder):
    """A Python every user can run, with the checkout's environment: Debian's python3 in a venv whose
    site-packages, share/ and etc/ are the checkout's own (links), as a course machine's /opt/course would be."""
    venv = Path(sys.prefix)
    folder = Path(folder)
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(folder)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packages = folder / "lib" / version / "site-packages"
    packages.rmdir()
    packages.symlink_to(venv / "lib" / version / "site-packages")
    for shared in ("share", "etc"):
        (folder / shared).symlink_to(venv / shared)
    return folder / "bin" / "python"


@contextlib.contextmanager
def readable_by_all(*paths):
    """Every folder above paths opened for traversal (o+x) where it was not; put back afterwards."""
    opened = []
    for path in paths:
        for folder in [*reversed(Path(path).absolute().parents)]:  # the links' own folders, not their targets
            mode = folder.stat().st_mode
            if not mode & 0o001:
                os.chmod(folder, mode | 0o001)
                opened.append((folder, mode))
    try:
        yield
    finally:
        for folder, mode in reversed(opened):
            os.chmod(folder, mode)


@contextlib.contextmanager
def shared_folder():
    """A new folder every user may enter and read (mode 755) in the system's temporary folder, removed afterwards.

    Not under pytest's own: pytest makes its base folder private again (mode 700) whenever a process of the run first
    asks for a temporary folder, which would lock the students out halfway.
    """
    folder = Path(tempfile.mkdtemp(prefix="course-hub-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def unix_users(count):
    """count new Unix users with private home folders, removed (with their homes) afterwards."""
    names = [f"hubstu{uuid.uuid4().hex[:6]}{index}" for index in range(count)]
    try:
        for name in names:
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
            os.chmod(Path("~" + name).expanduser(), 0o700)
        yield names
    finally:
        for name in names:
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", name], capture_output=True)


# ----- The hub ------------------------------------------------------------------------------------------------------

OVERLAY = """
c = get_config()  # noqa: F821
load_subconfig({course_config!r})  # noqa: F821 -- the course's own hub/jupyterhub_config.py, then the test's changes
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = set({students!r})
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{state}/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = "{state}/jupyterhub.pid"
c.Spawner.http_timeout = {startup}
c.Spawner.start_timeout = {startup}
c.Spawner.args = ["--LabApp.expose_app_in_browser=True"]  # the screenshots open the Assignment List through it
"""


class Hub:
    """A running JupyterHub (a context manager): the course's config with the dummy authenticator, on free ports."""

    def __init__(self, state, students, python, exchange, course_root=ROOT):
        self.state, self.url = Path(state), f"http://127.0.0.1:{free_port()}"
        self.state.mkdir(parents=True, exist_ok=True)
        overlay = self.state / "jupyterhub_config.py"
        overlay.write_text(OVERLAY.format(
            course_config=str(Path(course_root) / "hub" / "jupyterhub_config.py"), students=list(students),
            hub_port=free_port(), proxy_api_port=free_port(), proxy=PROXY, state=self.state, startup=STARTUP))
        self.environment = dict(os.environ, HUB_URL=self.url, COURSE_PYTHON=str(python),
                                COURSE_EXCHANGE=str(exchange), CONFIGPROXY_AUTH_TOKEN=secrets.token_hex(16))
        self.log = self.state / "jupyterhub.log"

    def __enter__(self):
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [str(Path(sys.prefix) / "bin" / "jupyterhub"), "-f", str(self.state / "jupyterhub_config.py")],
                cwd=self.state, env=self.environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: self.stopped() or answers(self.url + "/hub/api/"), self.tail)
            assert not self.stopped(), f"the hub stopped:\n{self.tail()}"
        except AssertionError:
            self.__exit__(None, None, None)  # its proxy too
            raise
        return self

    def stopped(self):
        return self.process.poll() is not None

    def __exit__(self, *exc):
        self.process.terminate()  # the hub stops the servers it spawned (JupyterHub.cleanup_servers)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        proxy = self.state / "jupyterhub-proxy.pid"  # the proxy outlives a hub stopped by a signal
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(proxy.read_text()), 15)

    def tail(self):
        return self.log.read_text(errors="replace")[-4000:]


def answers(url):
    """Whether url answers 200 (the proxy answers 404 for the hub's paths until the hub has added its route)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def wait_for(ready, explain, seconds=STARTUP):
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready after {seconds} s:\n{explain()}")
        time.sleep(0.5)


# ----- A student, through the hub's API and their own server's ----------------------------------------------------

class Student:
    """One student's browser-free session: log in with the hub's form, then call the APIs with a token of their own."""

    def __init__(self, hub, name):
        self.hub, self.name = hub, name
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies))
        self.token = None

    def request(self, method, path, body=None, form=None, headers=None):
        """(status, parsed JSON or text) of a request to the hub's address (path starts with /)."""
        headers = dict(headers or {})
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        request = urllib.request.Request(self.hub.url + path, data=data, method=method, headers=headers)
        try:
            with self.opener.open(request, timeout=STARTUP) as response:
                return response.status, parsed(response.read())
        except urllib.error.HTTPError as error:
            return error.code, parsed(error.read())

    def log_in(self, password="any"):
        """The login form, as a browser sends it; then a token of the student's own for the APIs."""
        self.request("GET", "/hub/login")
        self.request("POST", "/hub/login", form={"username": self.name, "password": password,
                                                 "_xsrf": self.cookie("_xsrf")})
        assert self.cookie("jupyterhub-session-id"), f"{self.name} was not logged in"
        status, answer = self.request("POST", f"/hub/api/users/{self.name}/tokens", body={"note": "test"},
                                      headers={"X-XSRFToken": self.cookie("_xsrf")})
        assert status in (200, 201), (status, answer)
        self.token = answer["token"]

    def cookie(self, name):
        """The cookie's latest value ('' without one): the hub sets a new _xsrf at login."""
        values = [cookie.value for cookie in self.cookies if cookie.name == name]
        return values[-1] if values else ""

    def start_server(self):
        """Start the student's server (logging in with the form already asked for it, as in a browser) and wait."""
        status, answer = self.request("POST", f"/hub/api/users/{self.name}/server")
        assert status in (201, 202) or (status == 400 and "pending" in str(answer)), (status, answer)
        wait_for(lambda: self.request("GET", f"/hub/api/users/{self.name}")[1].get("servers", {}).get("", {})
                 .get("ready"), self.hub.tail)

    def server(self, method, path, **kwargs):
        """A request to the student's own server: /user/<name><path>."""
        return self.request(method, f"/user/{self.name}{path}", **kwargs)

    def assignments(self, course_id):
        status, answer = self.server("GET", "/assignments?" + urllib.parse.urlencode({"course_id": course_id}))
        assert status == 200 and answer.get("success"), (status, answer)
        return answer["value"]

    def act(self, action, course_id, assignment):
        """nbgrader's fetch, submit or fetch_feedback, as the Assignment List's buttons call it."""
        status, answer = self.server("POST", f"/assignments/{action}",
                                     form={"course_id": course_id, "assignment_id": assignment})
        assert status == 200 and answer.get("success"), (status, answer)
        return answer["value"]

    def read(self, path):
        status, answer = self.server("GET", f"/api/contents/{urllib.parse.quote(path)}?content=1")
        assert status == 200, (status, answer)
        return answer["content"]

    def write_notebook(self, path, notebook):
        status, answer = self.server("PUT", f"/api/contents/{urllib.parse.quote(path)}",
                                     body={"type": "notebook", "format": "json", "content": notebook})
        assert status in (200, 201), (status, answer)

    def run(self, sources, cwd):
        """Run code cells in order on a new kernel of the student's server started in cwd; the text each printed
        (stdout, results and errors), stopping after the first error. The kernel is shut down afterwards."""
        status, kernel = self.server("POST", "/api/kernels", body={"name": "python3", "path": cwd})
        assert status in (200, 201), (status, kernel)
        try:
            address = self.hub.url.replace("http", "ws", 1) + f"/user/{self.name}/api/kernels/{kernel['id']}/channels"
            return run_cells(address, self.token, sources)
        finally:
            self.server("DELETE", f"/api/kernels/{kernel['id']}")


def parsed(raw):
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text

