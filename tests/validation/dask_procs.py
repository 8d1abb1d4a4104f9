"""Real ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1 for sweep tests."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, env, log, cwd):
    """Start ``args`` in its own process group (killable as a whole, as a node)."""
    return subprocess.Popen(
        args,
        env=env,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=60)


def scheduler(port, env, log, cwd):
    args = [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port)]
    return start([*args, "--no-dashboard"], env, log, cwd)


def worker(address, local_directory, env, log, cwd, name=None):
    args = [BIN / "dask", "worker", address, "--nthreads", "1", "--no-dashboard"]
    args += ["--local-directory", local_directory]
    if name is not None:
        args += ["--name", name]
    return start(args, env, log, cwd)
