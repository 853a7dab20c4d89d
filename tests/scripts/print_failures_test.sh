#!/usr/bin/env bash
# Usage: print_failures_test.sh SOURCE_DIR WORK_DIR
# Runs ctest on a project with a passing, a failing, a timed-out and a skipped
# test, then checks that print-failures.sh prints the end of the failing and
# timed-out tests' output, and nothing of the others.
set -uo pipefail
source_dir=$1 work=$2
script=$source_dir/scripts/print-failures.sh
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work/project" || exit 1
cat > "$work/project/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(print_failures NONE)
enable_testing()
add_test(NAME passes COMMAND bash -c "echo passing-output")
add_test(NAME fails COMMAND bash -c "for i in 1 2 3 4 5; do echo failing-line-\$i; done; exit 3")
add_test(NAME hangs COMMAND bash -c "echo hanging-output; exec sleep 30")
set_tests_properties(hangs PROPERTIES TIMEOUT 1)
add_test(NAME skips COMMAND bash -c "echo skipping-output; exit 77")
set_tests_properties(skips PROPERTIES SKIP_RETURN_CODE 77)
CMAKE
cmake -S "$work/project" -B "$work/build" > /dev/null || fail "cannot configure the project"
ctest --test-dir "$work/build" > /dev/null 2>&1 && fail "ctest passed a project with a failing test"

out=$(bash "$script" "$work/build" 3) || fail "exit $?: $out"
[[ $out == *"==== fails (Test Failed.)"* ]] || fail "the failing test is not named: '$out'"
[[ $out == *$'failing-line-3\nfailing-line-4\nfailing-line-5'* ]] || fail "not the failing test's last lines: '$out'"
[[ $out != *failing-line-2* ]] || fail "more than the 3 lines asked for: '$out'"
[[ $out == *"==== hangs"*hanging-output* ]] || fail "the timed-out test is not shown: '$out'"
[[ $out != *passing-output* && $out != *skipping-output* ]] || fail "a test that did not fail is shown: '$out'"

out=$(bash "$script" "$work/none" 2>&1); status=$?
[ "$status" = 0 ] && [[ $out == *"no $work/none/Testing/Temporary/LastTest.log"* ]] ||
  fail "a folder without a run: exit $status, '$out'"
out=$(bash "$script" 2>&1); status=$?
[ "$status" != 0 ] && [[ $out == *usage* ]] || fail "no arguments: exit $status, '$out'"
echo "print-failures: failures and timeouts shown, passes and skips not"
