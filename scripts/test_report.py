#!/usr/bin/env python3
"""Reads the JUnit reports of one scripts/test.sh stage and says whether it passed.

Each stage of scripts/test.sh runs ctest with `--output-junit <stage>/ctest.xml` (one
<testcase> per ctest test: a GoogleTest binary, a Python check, a fuzz target) and with
GTEST_OUTPUT=xml:<stage>/gtest/ (one file per GoogleTest binary, one <testcase> per case,
with the message of every skip and failure). This script reads both:

  test_report.py stage <reports-dir> <stage>    prints the stage's line, its failed cases
                                                and its skips; exit 1 if the stage failed
  test_report.py summary <reports-dir>          one line per stage run so far and the total;
                                                exit 1 if any stage failed

A skip counts as a pass only for a limit of the machine that bootstrap cannot lift (one CPU,
no root, no cgroup v1), and the test says so by starting its message with "machine:"
(GTEST_SKIP() << "machine: needs two CPUs"). Any other skip fails the stage.
"""
import glob
import json
import os
import sys
import xml.etree.ElementTree as ET

MACHINE_PREFIX = "machine:"


def skip_reason(message):
    # GoogleTest puts "file.cc:12\n" before the text given to GTEST_SKIP().
    lines = (message or "").splitlines()
    if len(lines) > 1 and ":" in lines[0] and lines[0].rsplit(":", 1)[-1].isdigit():
        lines = lines[1:]
    return " ".join(l.strip() for l in lines).strip()


def read_ctest(path):
    """ctest's JUnit: (passed, failed names, not run names)."""
    if not os.path.exists(path):
        return 0, [], []
    passed, failed, not_run = 0, [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "?")
        status = case.get("status", "")
        if case.find("failure") is not None or status == "fail":
            failed.append(name)
        elif status in ("notrun", "disabled"):
            not_run.append(name)
        else:
            passed += 1
    return passed, failed, not_run


def read_gtest(directory):
    """GoogleTest's XML: (failed cases, [(case, reason)] skips)."""
    failed, skips = [], []
    for path in sorted(glob.glob(os.path.join(directory, "*.xml"))):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue  # a binary killed mid-write; ctest's report has its failure
        for case in root.iter("testcase"):
            name = "%s.%s" % (case.get("classname", "?"), case.get("name", "?"))
            if case.find("failure") is not None:
                failed.append(name)
            skipped = case.find("skipped")
            if skipped is not None or case.get("result") == "skipped":
                skips.append((name, skip_reason(skipped.get("message") if skipped is not None else "")))
    return failed, skips


def stage_result(reports, stage):
    base = os.path.join(reports, stage)
    passed, failed, not_run = read_ctest(os.path.join(base, "ctest.xml"))
    failed_cases, skips = read_gtest(os.path.join(base, "gtest"))
    machine = [(n, r) for n, r in skips if r.startswith(MACHINE_PREFIX)]
    refused = [(n, r) for n, r in skips if not r.startswith(MACHINE_PREFIX)]
    ran = os.path.exists(os.path.join(base, "ctest.xml"))
    return {
        "stage": stage,
        "ran": ran,
        "passed": passed,
        "failed": failed + not_run,
        "failed_cases": failed_cases,
        "machine_skips": machine,
        "refused_skips": refused,
        "ok": ran and not failed and not not_run and not refused,
    }


def print_stage(r, details=True):
    print("  %-10s %4d passed, %d failed, %d cases skipped (machine), %d skipped (not allowed)"
          % (r["stage"], r["passed"], len(r["failed"]), len(r["machine_skips"]),
             len(r["refused_skips"])))
    if not r["ran"]:
        print("    no report: ctest did not run")
    if not details:
        return
    for name in r["failed"]:
        print("    FAILED test %s" % name)
    for name in r["failed_cases"]:
        print("    failed case %s" % name)
    for name, reason in r["machine_skips"]:
        print("    skipped (%s): %s: %s" % (r["stage"], name, reason))
    for name, reason in r["refused_skips"]:
        print("    SKIPPED, NOT ALLOWED (%s): %s: %s" % (r["stage"], name, reason or "(no message)"))


def stages_run(reports):
    path = os.path.join(reports, "stages")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.strip()]


def main(argv):
    if len(argv) == 4 and argv[1] == "stage":
        reports, stage = argv[2], argv[3]
        with open(os.path.join(reports, "stages"), "a") as f:
            f.write(stage + "\n")
        r = stage_result(reports, stage)
        print_stage(r)
        with open(os.path.join(reports, stage, "result.json"), "w") as f:
            json.dump(r, f, indent=1)
        return 0 if r["ok"] else 1
    if len(argv) == 3 and argv[1] == "summary":
        reports = argv[2]
        total = {"passed": 0, "failed": 0, "machine": 0, "refused": 0}
        ok = True
        for stage in stages_run(reports):
            r = stage_result(reports, stage)
            print_stage(r)
            total["passed"] += r["passed"]
            total["failed"] += len(r["failed"])
            total["machine"] += len(r["machine_skips"])
            total["refused"] += len(r["refused_skips"])
            ok = ok and r["ok"]
        print("booster: %(passed)d passed, %(failed)d failed; %(machine)d cases skipped for the "
              "machine, %(refused)d skipped without a machine reason" % total)
        return 0 if ok else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
