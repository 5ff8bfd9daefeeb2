# The grading image for `make grade-k8s` (docs/instructors.md, "Large classes"): this checkout's code and its pinned
# environment, bubblewrap, and a non-root user. It holds solutions/, the reference answers: push it to a registry
# only the course staff can pull from. Build it from the commit the course folder (the claim) holds:
#   docker build -t REGISTRY/course-grading:COMMIT .
# Debian's own Python 3.11, not a Python image's: the sandbox mounts a system-wide Python as its standard library, its
# interpreter and the shared libraries under /usr/lib (grading/sandbox/sandbox.py), where Debian keeps libpython.
FROM debian:bookworm-slim

# bubblewrap: the sandbox; util-linux: setpriv and prlimit, which start each probe; make: the set-up below
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv bubblewrap util-linux make ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# torch's CPU wheels (the pin in requirements.txt matches them): grading runs on CPU, and the CUDA wheels add GBs
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    PIP_NO_CACHE_DIR=1 \
    MPLBACKEND=Agg

WORKDIR /opt/course
COPY . .
RUN make .venv/.compiled PYTHON=python3 \
    && useradd --uid 1000 --create-home --shell /usr/sbin/nologin grader
ENV PATH=/opt/course/.venv/bin:$PATH

# The default user cannot sandbox: the Jobs of `make grade-k8s` run the grader as root inside the pod's own user
# namespace (hostUsers: false), root there and no one on the node.
USER grader
CMD ["python", "-m", "grading.grade", "--help"]
