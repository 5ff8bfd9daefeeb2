"""What the sandbox shows in place of an assignment's scored data: stand-in files mounted over the installed ones.

An assignment whose trained task is scored on data every student has (files of the Python installation: the test
images of a dataset that ships with a package, text that ships with Python) declares it in its cases package as
`stand_ins(folder)`: it writes stand-ins in folder and returns [(installed path, stand-in path)], a file or a folder
each (grading/cases/__init__.py). prepare_runtime copies them into the runtime (covers/<n>/) and lists them in
covers.json; bwrap_arguments mounts each over its installed path, read-only, after the Python installation, so every
route to the data inside the sandbox (the course's functions, the package's own loader, reading the file by path, a
compiled copy beside it) finds the stand-in. The judge, outside the sandbox, still reads the real data.
"""
import json
import os
import shutil
from pathlib import Path

LIST = "covers.json"


def copy_covers(runtime, pairs):
    """Copy each stand-in into runtime/covers/<n>/ and list [installed, path relative to runtime] in covers.json."""
    listed = []
    for number, (installed, stand_in) in enumerate(pairs):
        installed, stand_in = Path(os.path.realpath(installed)), Path(stand_in)
        if installed.is_dir() != stand_in.is_dir() or not installed.exists():
            raise ValueError(f"the stand-in {stand_in} cannot cover {installed}: both must exist, of one kind")
        target = runtime / "covers" / str(number) / stand_in.name
        target.parent.mkdir(parents=True)
        (shutil.copytree if stand_in.is_dir() else shutil.copy)(stand_in, target)
        listed.append([str(installed), str(target.relative_to(runtime))])
    (runtime / LIST).write_text(json.dumps(listed))


def covers(runtime):
    """[(installed path, stand-in path on this machine)] listed in the runtime (none when it has no covers.json)."""
    path = Path(runtime) / LIST
    if not path.is_file():
        return []
    return [(installed, str(Path(runtime) / relative)) for installed, relative in json.loads(path.read_text())]


def cover_arguments(runtime, mounted):
    """bwrap's options mounting each stand-in over its installed path, for the installed paths inside a mounted
    folder (one outside every mount is not in the sandbox at all)."""
    inside = lambda path: any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in mounted)
    arguments = []
    for installed, stand_in in covers(runtime):
        if inside(installed):
            arguments += ["--ro-bind", stand_in, installed]
    return arguments
