"""`make stop`: stop every Jupyter server (`make lab`'s JupyterLab) serving FOLDER, whatever port
it took: jupyter_server's own listing and shutdown (what `jupyter server list` and `jupyter lab
stop PORT` do), in one Python instead of one per step (each imports jupyter_server, about a
second of CPU).

    python .ci/stop_lab.py FOLDER
"""
import os
import sys

from jupyter_server.serverapp import list_running_servers, shutdown_server


def main(folder: str) -> int:
    here = os.path.realpath(folder)
    servers = [info for info in list_running_servers() if os.path.realpath(info.get("root_dir", "")) == here]
    if not servers:
        print(f"no JupyterLab started from {folder} is running")
    status = 0
    for info in servers:
        print(f"Shutting down server on {info['port']}...", flush=True)
        if not shutdown_server(info):
            print(f"the server on port {info['port']} (pid {info['pid']}) did not stop", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python .ci/stop_lab.py FOLDER (the folder `make lab` served)")
    sys.exit(main(sys.argv[1]))
