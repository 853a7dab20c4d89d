"""A Dask cluster for a test of `gpudiag report --dask FILE`: a scheduler that
writes the scheduler file FILE, and two workers, all in this process, until
its standard input closes."""

import sys

from distributed import LocalCluster

if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None, scheduler_kwargs={"scheduler_file": sys.argv[1]}):
        sys.stdin.read()
