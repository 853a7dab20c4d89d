"""The ranks of a job report analysed as tasks on a Dask cluster.

`gpudiag report --dask SCHEDULER` runs this with the Debian python3 and one
argument: a JSON request file,

    {"scheduler": "local" | "tcp://host:port" | "/path/to/scheduler.json",
     "workers": N,            # the local cluster's, else unused
     "gpudiag": "/path/to/gpudiag",
     "cwd": "/the/client's/folder",
     "args": [...],           # the report options a rank's analysis takes
     "traces": [{"path": "as given", "abs": "/absolute/path",
                 "html": "its page, as given" or "", "html_abs": "/absolute/page.html" or ""}]}

One task per trace runs `gpudiag report --rank-summary` on a worker and hands
back its JSON text. What comes back goes to stdout, one line per trace, in
input order: {"index": i, "summary": "<JSON text>"} or {"index": i, "error":
"<trace>: <why> (Dask worker <address>)"}. The merge is gpudiag's own, as
with the local threads.

Exit status: 0 the lines were written (some may be errors); 2 the cluster
could not be used (why on stderr, one line); 3 dask.distributed is missing.
"""

import json
import os
import shutil
import subprocess
import sys

NO_DASK = 3
NO_CLUSTER = 2


def summarize(gpudiag, args, cwd, trace, page):
    """A task: one trace's summary, made by gpudiag on the worker."""
    from distributed import get_worker

    try:
        worker = get_worker().address
    except ValueError:
        worker = "?"
    # The client's gpudiag when the worker sees it (this machine, a shared
    # file system), else the one on the worker's PATH.
    exe = gpudiag if os.access(gpudiag, os.X_OK) else shutil.which("gpudiag")
    if exe is None:
        return {"error": f"no gpudiag at {gpudiag} nor on the worker's PATH", "worker": worker}
    # In the client's folder when the worker sees it, with the paths as the
    # user gave them, so that the summary and the page name the trace as the
    # local analysis does; else at the absolute paths.
    here = os.path.isdir(cwd)
    command = [exe, "report", "--rank-summary", *args]
    if page["path"]:
        command += ["--html", page["path"] if here else page["abs"]]
    command += ["--", trace["path"] if here else trace["abs"]]
    try:
        done = subprocess.run(command, cwd=cwd if here else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              encoding="utf-8", errors="replace")
    except OSError as e:
        return {"error": f"cannot run {exe}: {e.strerror}", "worker": worker}
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"gpudiag exited with status {done.returncode}"
        return {"error": why.removeprefix("gpudiag report: "), "worker": worker}
    return {"summary": done.stdout, "worker": worker}


def connect(request):
    """The client of the cluster the request names; the local one is made here."""
    from distributed import Client, LocalCluster

    scheduler = request["scheduler"]
    if scheduler == "local":
        # Threads, not processes: each task's work is a gpudiag process of
        # its own, and a threaded cluster starts in a fraction of the time.
        cluster = LocalCluster(n_workers=max(1, int(request.get("workers", 1))), threads_per_worker=1,
                               processes=False, dashboard_address=None)
        return Client(cluster), cluster
    if "://" in scheduler:
        return Client(scheduler), None
    # Client(scheduler_file=) waits for a file that is not there yet: a
    # missing one is a mistake, said at once.
    if not os.path.isfile(scheduler):
        raise OSError(f"no scheduler file {scheduler} (`dask scheduler --scheduler-file {scheduler}` writes one)")
    return Client(scheduler_file=scheduler), None


def error_of(trace, why, worker):
    why = why.removeprefix(trace["path"] + ": ").removeprefix(trace["abs"] + ": ")
    return f"{trace['path']}: {why} (Dask worker {worker})"


def main(argv):
    if len(argv) != 2:
        print("usage: gpudiag_dask.py REQUEST.json", file=sys.stderr)
        return NO_CLUSTER
    with open(argv[1], encoding="utf-8") as f:
        request = json.load(f)
    try:
        import distributed
    except ImportError as e:
        print(f"cannot import dask.distributed: {e}", file=sys.stderr)
        return NO_DASK
    try:
        client, cluster = connect(request)
    except Exception as e:  # whatever Dask raises for an address or file it cannot use
        print(f"cannot connect to the Dask scheduler: {e}", file=sys.stderr)
        return NO_CLUSTER
    traces = request["traces"]
    try:
        futures = [
            client.submit(summarize, request["gpudiag"], request["args"], request["cwd"],
                          {"path": t["path"], "abs": t["abs"]}, {"path": t["html"], "abs": t["html_abs"]}, pure=False)
            for t in traces
        ]
        distributed.wait(futures)
        for i, (trace, future) in enumerate(zip(traces, futures)):
            if future.status == "finished":
                done = future.result()
                if "summary" in done:
                    line = {"index": i, "summary": done["summary"]}
                else:
                    line = {"index": i, "error": error_of(trace, done["error"], done["worker"])}
            else:  # the task itself failed: its worker died, it could not be sent, ...
                why = "cancelled" if future.status == "cancelled" else repr(future.exception())
                line = {"index": i, "error": f"{trace['path']}: the Dask task failed: {why}"}
            sys.stdout.write(json.dumps(line) + "\n")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
