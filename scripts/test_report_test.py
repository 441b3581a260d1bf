#!/usr/bin/env python3
"""Tests scripts/test_report.py on JUnit files shaped like ctest's and GoogleTest's."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_report  # noqa: E402

CTEST = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="3" failures="1" disabled="0" skipped="0">
  <testcase name="a_test" classname="a_test" time="0.5" status="run"><system-out>x</system-out></testcase>
  <testcase name="b_test" classname="b_test" time="0.5" status="run"><system-out>x</system-out></testcase>
  %s
</testsuite>
"""
FAILED_CTEST_CASE = """<testcase name="c_test" classname="c_test" status="fail">
  <failure message="Failed"/><system-out>x</system-out></testcase>"""
PASSED_CTEST_CASE = """<testcase name="c_test" classname="c_test" status="run"/>"""

GTEST = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="0" disabled="0" errors="0" name="AllTests">
  <testsuite name="A" tests="3" failures="0" skipped="1" errors="0">
    <testcase name="Cpu" file="a.cc" line="2" status="run" result="skipped" classname="A">
      <skipped message="a.cc:2&#x0A;%s"><![CDATA[a.cc:2
%s]]></skipped>
    </testcase>
    <testcase name="Ok" file="a.cc" line="4" status="run" result="completed" classname="A" />
  </testsuite>
</testsuites>
"""


class StageTest(unittest.TestCase):
    def write(self, stage, ctest_extra, skip_message):
        base = os.path.join(self.dir, stage)
        os.makedirs(os.path.join(base, "gtest"), exist_ok=True)
        with open(os.path.join(base, "ctest.xml"), "w") as f:
            f.write(CTEST % ctest_extra)
        if skip_message is not None:
            with open(os.path.join(base, "gtest", "a_test.xml"), "w") as f:
                f.write(GTEST % (skip_message, skip_message))

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_machine_skip_passes_and_is_listed(self):
        self.write("unit", PASSED_CTEST_CASE, "machine: needs two CPUs")
        r = test_report.stage_result(self.dir, "unit")
        self.assertTrue(r["ok"])
        self.assertEqual(r["passed"], 3)
        self.assertEqual(r["machine_skips"], [("A.Cpu", "machine: needs two CPUs")])
        self.assertEqual(r["refused_skips"], [])

    def test_skip_without_machine_reason_fails_the_stage(self):
        self.write("unit", PASSED_CTEST_CASE, "helm not found")
        r = test_report.stage_result(self.dir, "unit")
        self.assertFalse(r["ok"])
        self.assertEqual(r["refused_skips"], [("A.Cpu", "helm not found")])

    def test_failed_ctest_test_fails_the_stage(self):
        self.write("e2e", FAILED_CTEST_CASE, None)
        r = test_report.stage_result(self.dir, "e2e")
        self.assertFalse(r["ok"])
        self.assertEqual(r["passed"], 2)
        self.assertEqual(r["failed"], ["c_test"])

    def test_stage_without_report_fails(self):
        r = test_report.stage_result(self.dir, "tsan")
        self.assertFalse(r["ran"])
        self.assertFalse(r["ok"])

    def test_summary_exit_code_follows_the_stages(self):
        script = os.path.join(HERE, "test_report.py")
        self.write("unit", PASSED_CTEST_CASE, "machine: one CPU")
        self.assertEqual(subprocess.run([sys.executable, script, "stage", self.dir, "unit"],
                                        capture_output=True).returncode, 0)
        out = subprocess.run([sys.executable, script, "summary", self.dir],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertIn("booster: 3 passed, 0 failed; 1 cases skipped for the machine", out.stdout)
        self.write("e2e", FAILED_CTEST_CASE, None)
        self.assertEqual(subprocess.run([sys.executable, script, "stage", self.dir, "e2e"],
                                        capture_output=True).returncode, 1)
        out = subprocess.run([sys.executable, script, "summary", self.dir],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("FAILED test c_test", out.stdout)


if __name__ == "__main__":
    unittest.main()
