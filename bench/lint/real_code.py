#!/usr/bin/env python3
"""Runs a gpulint binary over a real code base and reports how it fared:

  files found / parsed / parse failures (first error of each) / crashes,
  thousands of lines read, findings per rule and per thousand lines,
  and every finding as JSON (--json-out) for reading by hand.

Each program is analysed by one gpulint process (-j at a time), as its own
build would run gpulint: a unit folder (--unit-marker) is a program, and
without a marker the whole tree is one, so a launch helper called from
another file of the program is judged by those calls. A crash is pinned to
its program and does not hide the others; --per-file runs one process per
file instead, to pin it to a file. gpulint shares the headers its CUDA files
parse (its precompiled preambles) only among the files of one process, so a
one-file program gains nothing from them: bench_lint.py measures that gain. The compile
commands are written to a generated compile_commands.json in the form the code
base's own build uses (nvcc for .cu, c++ for host sources), so gpulint's flag
translation is exercised too. The include paths a file needs come from options:

  --include-dir DIR      -I for every file (relative to the tree or absolute)
  --unit-include SUBDIR  -I<unit>/SUBDIR, where <unit> is the nearest folder
                         above the file holding --unit-marker (a sample's
                         CMakeLists.txt); '.' is the unit folder itself
  --define NAME[=VALUE]  -D for every file
  --extra-arg ARG        any other compiler argument
  --arg-for REGEX=ARG    ARG for the files whose path in the tree matches REGEX

--preset cuda-samples / llm.c / ggml-cuda / cccl-examples fills these in the way those projects build.
Headers of the tree are reported too (HeaderFilterRegex is the tree), and a
finding in a header included by several files counts once. Lines read are
those of the sources plus the tree's headers that some file includes by name.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE_EXTENSIONS = (".cu", ".cpp", ".cc", ".cxx", ".C")  # what gpulint walks into
HEADER_EXTENSIONS = (".h", ".cuh", ".hpp", ".hxx", ".hh", ".inl", ".cu.h")
PARSE_ERROR_RULE = "clang-diagnostic-error"
# nvcc switches spelt with one dash, which a host compiler would not take.
NVCC_ONLY = {"-use_fast_math", "-arch"}

# How the public projects this is measured on build (their CMakeLists/Makefile).
PRESETS = {
    # Samples/<group>/<sample>/CMakeLists.txt: include_directories(../../../Common),
    # some add ${CMAKE_CURRENT_SOURCE_DIR}/inc; CUDA and C++ are -std=c++17,
    # nvcc gets --extended-lambda; one sample needs _USE_MATH_DEFINES (Windows).
    # The NPP samples add Common/UtilNPP (Exceptions.h, Image.h).
    "cuda-samples": {
        "include_dir": ["Common", "Common/UtilNPP"], "unit_marker": "CMakeLists.txt", "unit_include": [".", "inc"],
        "define": [], "extra_arg": ["--extended-lambda"], "arg_for": [], "std": "c++17",
    },
    # Makefile: nvcc -std=c++17 --use_fast_math, -DENABLE_BF16 (the default
    # precision) and -DMULTI_GPU (NCCL installed) for the root programs and
    # llmc/; sources include "llmc/x.cuh" from the root. dev/cuda/Makefile
    # builds each kernel file alone with no define, matmul_* with OpenMP; they
    # include their own common.h (found next to the file).
    "llm.c": {
        "include_dir": [".", "llmc"], "unit_marker": None, "unit_include": [],
        "define": [], "extra_arg": ["--use_fast_math"], "std": "c++17",
        "arg_for": [(r"^([^/]+\.cu|llmc/.*)$", "-DENABLE_BF16"), (r"^([^/]+\.cu|llmc/.*)$", "-DMULTI_GPU"),
                    (r"^dev/cuda/matmul_(forward|backward)\.cu$", "-Xcompiler=-fopenmp")],
    },
    # ggml's CUDA backend in a ggml checkout (src/ggml-cuda/CMakeLists.txt with
    # the defaults): every ggml-cuda/*.cu, the fattn-tile/fattn-mma/mmq/mmf
    # template instances and only four fattn-vec ones (GGML_CUDA_FA_ALL_QUANTS
    # off); -use_fast_math -extended-lambda (written --extended-lambda here;
    # gpulint drops either spelling); GGML_SCHED_MAX_COPIES=4 and
    # GGML_CUDA_PEER_MAX_BATCH_SIZE=128 from the top-level CMake, and
    # GGML_CUDA_USE_GRAPHS as llama.cpp builds it (GGML_CUDA_GRAPHS on). The
    # rest of the checkout (CPU and other backends, tests, examples) and the
    # HIP/MUSA vendor headers are not part of it.
    "ggml-cuda": {
        "include_dir": ["include", "src", "src/ggml-cuda"], "unit_marker": None, "unit_include": [],
        "define": ["GGML_USE_CUDA", "GGML_CUDA_USE_GRAPHS", "GGML_SCHED_MAX_COPIES=4",
                   "GGML_CUDA_PEER_MAX_BATCH_SIZE=128"],
        "extra_arg": ["-use_fast_math", "--extended-lambda", "-arch=sm_90"], "arg_for": [], "std": "c++17",
        "exclude": [r"^(?!src/ggml-cuda/|src/[^/]+\.h$|include/)", r"^src/ggml-cuda/vendors/(hip|musa)\.h$",
                    r"^src/ggml-cuda/template-instances/fattn-vec-instance-(?!(f16-f16|q4_0-q4_0|q8_0-q8_0|bf16-bf16)\.cu$)"],
    },
    # NVIDIA/cccl's own Thrust and CUB example programs, at the tag whose
    # headers CUDA 13.0 ships (v3.0.1: /usr/local/cuda/include/cccl). Each
    # thrust/examples/*.cu and cub/examples/*/example_*.cu is its own
    # executable (their CMakeLists glob them one by one), built with
    # -I thrust/examples (include/timer.h) or -I cub/examples, and
    # THRUST_EXAMPLE_DEVICE_SIDE under nvcc; cpp_integration/ (device.cu with
    # host.cpp, built by hand per its README) is one program. The CUB examples
    # include cub/test/test_util.h, which includes c2h/include (cccl.c2h). The
    # rest of the checkout (the libraries' own headers and tests) is no part
    # of it: the headers are CUDA's.
    "cccl-examples": {
        "include_dir": ["c2h/include"], "unit_marker": None, "unit_include": [],
        "define": [], "extra_arg": [], "std": "c++17", "per_file": True,
        "together": [r"thrust/examples/cpp_integration/"],
        "arg_for": [(r"^thrust/examples/", "-I{tree}/thrust/examples"), (r"^cub/examples/", "-I{tree}/cub/examples"),
                    (r"^thrust/examples/.*\.cu$", "-DTHRUST_EXAMPLE_DEVICE_SIDE")],
        "exclude": [r"^(?!thrust/examples/|cub/examples/|cub/test/(test_util|mersenne)\.h$|c2h/include/)"],
    },
}


def find_sources(tree, excludes):
    sources, headers = [], []
    for root, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, tree)
            if any(re.search(pattern, rel) for pattern in excludes):
                continue
            if name.endswith(HEADER_EXTENSIONS):
                headers.append(path)
            elif name.endswith(SOURCE_EXTENSIONS):
                sources.append(path)
    return sources, headers


def count_lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


INCLUDE_LINE = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def included_headers(files, headers):
    """The tree's headers some file includes by name (a header only Windows or a
    missing sample would use is not read, so it does not count as read)."""
    names = set()
    pending = list(files)
    seen = set()
    by_name = {}
    for header in headers:
        by_name.setdefault(os.path.basename(header), []).append(header)
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(path, "rb") as f:
            for include in INCLUDE_LINE.findall(f.read()):
                name = os.path.basename(include.decode("utf-8", "replace"))
                if name in by_name and name not in names:
                    names.add(name)
                    pending.extend(by_name[name])
    return [h for h in headers if os.path.basename(h) in names]


def unit_folder(path, tree, marker):
    folder = os.path.dirname(path)
    while marker and folder.startswith(tree):
        if os.path.isfile(os.path.join(folder, marker)) and folder != tree:
            return folder
        folder = os.path.dirname(folder)
    return None


def compile_command(path, tree, args):
    includes = []
    for folder in args.include_dir:
        includes.append(os.path.normpath(os.path.join(tree, folder)))
    unit = unit_folder(path, tree, args.unit_marker)
    if unit:
        for sub in args.unit_include:
            candidate = os.path.normpath(os.path.join(unit, sub))
            if os.path.isdir(candidate):
                includes.append(candidate)
    flags = [f"-I{i}" for i in includes] + [f"-D{d}" for d in args.define]
    relative = os.path.relpath(path, tree)
    flags += [arg.replace("{tree}", tree) for pattern, arg in args.arg_for if re.search(pattern, relative)]
    if path.endswith(".cu"):
        command = ["nvcc", f"-std={args.std}"] + args.extra_arg + flags + ["-c", path, "-o", path + ".o"]
    else:
        # Host sources: the host compiler, with nvcc-only switches left out.
        host_extra = [a for a in args.extra_arg if not a.startswith("--") and a.split("=")[0] not in NVCC_ONLY]
        command = ["c++", f"-std={args.std}"] + host_extra + flags + ["-c", path, "-o", path + ".o"]
    return {"directory": os.path.dirname(path), "file": path, "arguments": command}


def programs(sources, tree, marker, per_file, together):
    """The files gpulint analyses together: one list per program. With
    per_file, each file is a program, except the files whose path in the tree
    starts with a `together` pattern's match: those are one program."""
    groups = {}
    for path in sources:
        if per_file:
            relative = os.path.relpath(path, tree)
            match = next((m for m in (re.match(p, relative) for p in together) if m), None)
            key = ("together", match.group(0)) if match else path
        else:
            key = unit_folder(path, tree, marker) or tree
        groups.setdefault(key, []).append(path)
    return list(groups.values())


def run_one(gpulint, work, config, index, paths, timeout, jobs):
    report = os.path.join(work, f"report-{index}.json")
    command = [gpulint, "-p", work, "--config", config, "--format=json", "-o", report, "-j", str(jobs)] + paths
    timeout *= len(paths)
    start = time.perf_counter()
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        returncode, stderr = result.returncode, result.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        returncode, stderr = "timeout", f"no answer within {timeout} s"
    elapsed = time.perf_counter() - start
    findings = []
    if returncode in (0, 1) and os.path.isfile(report):
        with open(report) as f:
            findings = json.load(f)["findings"]
    label = paths[0] if len(paths) == 1 else os.path.commonpath(paths) + f" ({len(paths)} files)"
    return {"file": label, "files": len(paths), "returncode": returncode, "stderr": stderr, "findings": findings, "seconds": elapsed}


def describe_exit(code):
    if code == "timeout":
        return "timed out"
    if code < 0:
        return f"signal {-code}"
    return f"exit code {code}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tree", help="root of the code base (an extracted checkout)")
    parser.add_argument("--gpulint", default=os.environ.get("GPULINT", shutil.which("gpulint") or "gpulint"))
    parser.add_argument("--preset", choices=sorted(PRESETS), help="include paths and defines of a known project")
    parser.add_argument("--include-dir", action="append", default=[], help="-I for every file")
    parser.add_argument("--unit-marker", help="file marking a unit folder (e.g. CMakeLists.txt)")
    parser.add_argument("--unit-include", action="append", default=[], help="-I<unit>/SUBDIR when it exists")
    parser.add_argument("--define", action="append", default=[], help="-D for every file")
    parser.add_argument("--extra-arg", action="append", default=[], help="another compiler argument")
    parser.add_argument("--arg-for", action="append", default=[], metavar="REGEX=ARG",
                        help="ARG for the files whose path relative to the tree matches REGEX")
    parser.add_argument("--std", help="language standard (default c++17)")
    parser.add_argument("--exclude", action="append", default=[], help="regex over paths relative to the tree")
    parser.add_argument("--checks", default="*", help="Checks: of the generated config")
    parser.add_argument("--json-out", help="write every finding, parse failure and crash here")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="gpulint processes at a time (default 1)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds one file may take")
    parser.add_argument("--per-file", action="store_true", help="one gpulint process per file, not per program")
    args = parser.parse_args()

    tree = os.path.realpath(args.tree)
    if not os.path.isdir(tree):
        sys.exit(f"real_code: no such folder: {args.tree}")
    if not shutil.which(args.gpulint) and not os.path.isfile(args.gpulint):
        sys.exit(f"real_code: cannot find gpulint '{args.gpulint}' (--gpulint or GPULINT)")
    preset = PRESETS.get(args.preset, {})
    args.include_dir = preset.get("include_dir", []) + args.include_dir
    args.unit_include = preset.get("unit_include", []) + args.unit_include
    args.unit_marker = args.unit_marker or preset.get("unit_marker")
    args.define = preset.get("define", []) + args.define
    args.extra_arg = preset.get("extra_arg", []) + args.extra_arg
    args.std = args.std or preset.get("std", "c++17")
    args.exclude = preset.get("exclude", []) + args.exclude
    # A preset whose programs are single files (the CCCL examples) says so.
    args.per_file = args.per_file or preset.get("per_file", False)
    args.together = preset.get("together", [])
    arg_for = list(preset.get("arg_for", []))
    for item in args.arg_for:
        pattern, sep, arg = item.partition("=")
        if not sep or not arg:
            sys.exit(f"real_code: --arg-for wants REGEX=ARG, not '{item}'")
        arg_for.append((pattern, arg))
    args.arg_for = arg_for

    sources, headers = find_sources(tree, args.exclude)
    if not sources:
        sys.exit(f"real_code: no sources ({' '.join(SOURCE_EXTENSIONS)}) under {tree}")
    read_headers = included_headers(sources, headers)
    source_lines = sum(count_lines(f) for f in sources)
    header_lines = sum(count_lines(f) for f in read_headers)
    kloc = (source_lines + header_lines) / 1000.0

    work = tempfile.mkdtemp(prefix="real_code_")
    try:
        with open(os.path.join(work, "compile_commands.json"), "w") as out:
            json.dump([compile_command(f, tree, args) for f in sources], out, indent=1)
        config = os.path.join(work, "gpulint.yaml")
        with open(config, "w") as out:
            # Single-quoted YAML: a quote inside is doubled.
            out.write(f"Checks: '{args.checks}'\n")
            out.write("HeaderFilterRegex: '^" + re.escape(tree + "/").replace("'", "''") + "'\n")
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda item: run_one(args.gpulint, work, config, item[0], item[1], args.timeout,
                                                         args.jobs),
                                    enumerate(programs(sources, tree, args.unit_marker, args.per_file,
                                                           args.together))))
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)

    crashes = [r for r in results if r["returncode"] not in (0, 1)]
    parse_failures, findings, seen = [], [], set()
    for result in results:
        for finding in result["findings"]:
            location = dict(finding.get("location", {}))
            # "dev/test/../../llmc/x.h" and "llmc/x.h" are one header.
            if location.get("file"):
                location["file"] = os.path.normpath(location["file"])
            if finding["rule"] == PARSE_ERROR_RULE:
                # The message is clang's first error; its note is at the file that failed.
                notes = finding.get("notes", [])
                failed = notes[0].get("location", {}).get("file") if notes else None
                parse_failures.append({"file": failed or result["file"],
                                       "line": location.get("line", 0),
                                       "error_file": location.get("file", ""), "message": finding["message"]})
                continue
            key = (finding["rule"], location.get("file"), location.get("line"), location.get("column"),
                   finding["message"])
            if key in seen:  # a header finding seen from another file
                continue
            seen.add(key)
            findings.append({"file": location.get("file", ""), "line": location.get("line", 0),
                             "column": location.get("column", 0), "rule": finding["rule"],
                             "name": finding.get("name", ""), "message": finding["message"],
                             "from": result["file"]})
    per_rule = {}
    for finding in findings:
        per_rule[finding["rule"]] = per_rule.get(finding["rule"], 0) + 1

    def rel(path):
        return os.path.relpath(path, tree) if path.startswith(tree + "/") else path

    print(f"tree: {tree}")
    print(f"gpulint: {args.gpulint}")
    print(f"files found:     {len(sources)}")
    print(f"files parsed:    {len(sources) - len(parse_failures) - sum(c['files'] for c in crashes)}")
    print(f"parse failures:  {len(parse_failures)}")
    for failure in parse_failures:
        where = f"{rel(failure['error_file'])}:{failure['line']}" if failure["error_file"] else ""
        print(f"  {rel(failure['file'])}: {failure['message']}"
              + (f"  [{where}]" if where else ""))
    print(f"crashes:         {len(crashes)}")
    for crash in crashes:
        tail = crash["stderr"].strip().splitlines()[-1:] or [""]
        print(f"  {rel(crash['file'])}: {describe_exit(crash['returncode'])}: {tail[0][:200]}")
    print(f"lines read:      {kloc:.1f} K  ({source_lines} in {len(sources)} sources, "
          f"{header_lines} in {len(read_headers)} included headers of the tree)")
    print(f"findings:        {len(findings)}  ({len(findings) / kloc:.2f} per thousand lines)")
    for rule in sorted(per_rule):
        print(f"  {rule}: {per_rule[rule]}  ({per_rule[rule] / kloc:.3f} per thousand lines)")
    slowest = max(results, key=lambda r: r["seconds"])
    print(f"time:            {wall:.1f} s wall with -j {args.jobs}; slowest process {slowest['seconds']:.1f} s "
          f"({rel(slowest['file'])})")

    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump({"tree": tree, "gpulint": args.gpulint, "files": len(sources),
                       "parse_failures": parse_failures,
                       "crashes": [{"file": c["file"], "exit": describe_exit(c["returncode"]),
                                    "stderr": c["stderr"][-2000:]} for c in crashes],
                       "source_lines": source_lines, "header_lines": header_lines,
                       "per_rule": per_rule, "findings": findings}, out, indent=1)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
