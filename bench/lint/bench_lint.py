#!/usr/bin/env python3
"""Times gpulint against its two anchors on the same .cu files, in one run each:

  time(gpulint, all checks) / time(clang-tidy-19 -checks=-*,bugprone-unused-return-value)   goal <= 0.5
  time(gpulint)             / time(clang++-19 -fsyntax-only)                                 goal <= 1.15

All three get the same compile command (a generated compile_commands.json),
so the ratios measure the analysis, not different parsing work. The file set
is a folder or files given as arguments (e.g. a fetched public CUDA project),
else the analyzer's test snippets. Extra compile flags (include paths the
project needs) come after `--`. Best of --repeat runs. Ratios are printed last.

gpulint parses the headers the CUDA files share once per run (a precompiled
preamble); --compare-preamble times it with --no-preamble too and fails when
the two reports differ in any byte. Measured with it (analyzer/README.md has
the times): gpulint / clang-tidy 0.345 on llm.c dev/cuda (--no-preamble 1.047
in the same run) and 0.371 on cuda-samples Samples/ with -I Common
(--no-preamble 0.862), reports identical.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))


def collect(paths):
    files = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in names if n.endswith(".cu")]
        elif os.path.isfile(path):
            files.append(os.path.abspath(path))
        else:
            sys.exit(f"bench_lint: no such file or folder: {path}")
    return sorted(set(os.path.abspath(f) for f in files))


def timed(commands, repeat):
    """Best total wall time of running `commands` (a list of argv) one after another."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        for command in commands:
            result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            # 1 is "findings" for the linters and "errors" for clang; a crash is not a timing.
            if result.returncode not in (0, 1):
                sys.exit(f"bench_lint: {command[0]} failed with exit code {result.returncode}")
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help=".cu files or folders (default: the analyzer test snippets)")
    parser.add_argument("--gpulint", default=os.environ.get("GPULINT", shutil.which("gpulint") or "gpulint"))
    parser.add_argument("--clang-tidy", default="clang-tidy-19")
    parser.add_argument("--clang", default="clang++-19")
    parser.add_argument("--cuda", default="/usr/local/cuda")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compare-preamble", action="store_true",
                        help="also time gpulint --no-preamble and require the same report")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    paths = args.paths or [p for p in os.environ.get("GPULINT_BENCH_FILES", "").split(":") if p]
    paths = paths or [os.path.join(SOURCE, "tests", "analyzer", "snippets")]
    files = collect(paths)
    if not files:
        sys.exit("bench_lint: no .cu files under " + " ".join(paths))
    for tool in (args.gpulint, args.clang_tidy, args.clang):
        if not shutil.which(tool) and not os.path.isfile(tool):
            sys.exit(f"bench_lint: cannot find {tool}")

    flags = ["-x", "cuda", "--cuda-host-only", "--no-cuda-version-check", f"--cuda-path={args.cuda}",
             "-isystem", f"{args.cuda}/include/cccl", "-idirafter", os.path.join(SOURCE, "analyzer", "compat"),
             "-std=c++17", "-w"] + extra
    work = tempfile.mkdtemp(prefix="bench_lint_")
    try:
        database = [{"directory": os.path.dirname(f), "file": f,
                     "arguments": ["clang++"] + flags + ["-c", f]} for f in files]
        with open(os.path.join(work, "compile_commands.json"), "w") as out:
            json.dump(database, out)
        gpulint = timed([[args.gpulint, "-p", work, "--format=json", "-o", os.path.join(work, "out.json")] + files],
                        args.repeat)
        plain = None
        if args.compare_preamble:
            plain = timed([[args.gpulint, "-p", work, "--no-preamble", "--format=json",
                            "-o", os.path.join(work, "plain.json")] + files], args.repeat)
            with open(os.path.join(work, "out.json"), "rb") as a, open(os.path.join(work, "plain.json"), "rb") as b:
                same = a.read() == b.read()
        tidy = timed([[args.clang_tidy, "-p", work, "-checks=-*,bugprone-unused-return-value", "--quiet"] + files],
                     args.repeat)
        # One driver per file: clang's driver stops at the first file with an error.
        syntax = timed([[args.clang, "-fsyntax-only"] + flags + [f] for f in files], args.repeat)
        with open(os.path.join(work, "out.json")) as report:
            findings = len(json.load(report)["findings"])
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"files: {len(files)}  findings: {findings}  (best of {args.repeat})")
    print(f"gpulint (all checks):                       {gpulint:8.2f} s")
    if plain is not None:
        print(f"gpulint --no-preamble:                      {plain:8.2f} s  "
              f"(report {'identical' if same else 'DIFFERENT'})")
    print(f"clang-tidy-19 bugprone-unused-return-value: {tidy:8.2f} s")
    print(f"clang++-19 -fsyntax-only:                   {syntax:8.2f} s")
    print(f"gpulint / clang-tidy   = {gpulint / tidy:.3f}  (goal <= 0.5)")
    print(f"gpulint / syntax-only  = {gpulint / syntax:.3f}  (goal <= 1.15)")
    if plain is not None:
        print(f"gpulint --no-preamble / clang-tidy = {plain / tidy:.3f}")
        if not same:
            sys.exit("bench_lint: the reports with and without the preamble differ")


if __name__ == "__main__":
    main()
