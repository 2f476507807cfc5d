"""shiftgit.outcomes on real runner output: pytest (runs here), cargo and prove (when installed),
JUnit XML written by pytest itself; go and nextest as inline text in their formats (not installed here)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftgit.evidence.outcome import MAX_FAILING, Outcome
from shiftgit.evidence.outcomes import RUNNERS, detect_runner, parse_outcome

PYTEST_ARGV = [sys.executable, "-m", "pytest"]
CARGO = shutil.which("cargo")
PROVE = shutil.which("prove")
# Captured before conftest's autouse fixture points HOME elsewhere: rustup finds its toolchains here.
REAL_HOME = Path.home()
RUST_ENV = {"RUSTUP_HOME": os.environ.get("RUSTUP_HOME", str(REAL_HOME / ".rustup")),
            "CARGO_HOME": os.environ.get("CARGO_HOME", str(REAL_HOME / ".cargo"))}

SAMPLE_TESTS = '''\
import pytest


def test_pass():
    assert 1 + 1 == 2


def test_fail():
    assert 1 - 1 == 2


@pytest.fixture
def broken():
    raise RuntimeError("boom")


def test_error(broken):
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.parametrize("a,b", [(1, 1), (2, 3), ("x - y", "z")])
def test_param(a, b):
    assert a == b


class TestGroup:
    def test_in_class(self):
        assert False, "nope - really"


@pytest.mark.xfail
def test_xf():
    assert False
'''
SAMPLE_FAILING = (
    "tests/test_calc.py::TestGroup::test_in_class",
    "tests/test_calc.py::test_error",
    "tests/test_calc.py::test_fail",
    "tests/test_calc.py::test_param[2-3]",
    "tests/test_calc.py::test_param[x - y-z]",
)
# 2 passed + 1 skipped + 1 xfailed (counted as skipped) + 4 failed + 1 error (counted as failed)
SAMPLE = Outcome("pytest", passed=2, failed=5, skipped=2, failing=SAMPLE_FAILING)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PY_COLORS", "FORCE_COLOR", "NO_COLOR")}
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **extra)
    return env


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 120) -> tuple[str, int]:
    proc = subprocess.run(argv, cwd=cwd, env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout)
    return proc.stdout + proc.stderr, proc.returncode


class Sample:
    """A small real suite; `sample(*options)` runs real pytest on it -> (output, exit code)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[tuple[str, ...], tuple[str, int]] = {}
        (root / "tests").mkdir()
        (root / "tests" / "test_calc.py").write_text(SAMPLE_TESTS)
        (root / "t2").mkdir()
        (root / "t2" / "test_broken.py").write_text("import nonexistent_module_xyz\n")
        (root / "t2" / "test_ok.py").write_text("def test_ok():\n    pass\n")

    def __call__(self, *options: str) -> tuple[str, int]:
        if options not in self.cache:
            self.cache[options] = run([*PYTEST_ARGV, "-p", "no:cacheprovider", *options], self.root)
        return self.cache[options]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    return Sample(tmp_path_factory.mktemp("sample"))


# ---------------------------------------------------------------- pytest, real runs

@pytest.mark.parametrize("options", [[], ["-q"], ["-v", "-rN"], ["-q", "--color=yes"]],
                         ids=["default", "quiet", "verbose-no-summary", "color"])
def test_real_pytest_output(sample: Sample, options: list[str]) -> None:
    output, code = sample(*options, "tests")
    assert code == 1
    assert parse_outcome(PYTEST_ARGV, output, code) == SAMPLE


def test_real_pytest_output_is_sniffed_without_argv(sample: Sample) -> None:
    output, code = sample("-q", "tests")
    assert parse_outcome(["make", "check"], output, code) == SAMPLE


def test_real_pytest_qq_has_no_counts_line_but_keeps_failures(
        sample: Sample) -> None:
    output, code = sample("-qq", "tests")
    assert parse_outcome(PYTEST_ARGV, output, code) == Outcome(
        "pytest", passed=None, failed=5, skipped=None, failing=SAMPLE_FAILING)


def test_real_pytest_collection_error(sample: Sample) -> None:
    output, code = sample("t2")
    assert parse_outcome(PYTEST_ARGV, output, code) == Outcome(
        "pytest", passed=0, failed=1, skipped=0, failing=("t2/test_broken.py",))


def test_last_pytest_run_wins(sample: Sample) -> None:
    failing, _ = sample("-q", "tests")
    passing, code = sample("-q", "tests", "-k", "test_pass")
    outcome = parse_outcome(PYTEST_ARGV, failing + passing, code)
    assert outcome == Outcome("pytest", passed=1, failed=0, skipped=0)


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
def test_real_pytest_junit_matches_terminal_ids(sample: Sample,
                                                family: str) -> None:
    xml_path = sample.root / f"junit-{family}.xml"
    output, code = sample("-q", "tests", "-o", f"junit_family={family}", f"--junit-xml={xml_path}")
    outcome = parse_outcome(PYTEST_ARGV, output, code, junit_xml=xml_path.read_text())
    assert outcome == Outcome("junit", passed=2, failed=5, skipped=2, failing=SAMPLE_FAILING)


def test_real_pytest_junit_collection_error(sample: Sample) -> None:
    xml_path = sample.root / "junit-t2.xml"
    output, code = sample("t2", f"--junit-xml={xml_path}")
    outcome = parse_outcome(PYTEST_ARGV, output, code, junit_xml=xml_path.read_text())
    assert outcome == Outcome("junit", passed=0, failed=1, skipped=0, failing=("t2/test_broken.py",))


# ---------------------------------------------------------------- pytest, edge text

def test_pytest_reason_split_respects_brackets() -> None:
    output = (
        "=========================== short test summary info ============================\n"
        "FAILED tests/t.py::test_x[a - b] - AssertionError: x - y\n"
        "FAILED tests/my - dir/t.py::test_y - boom\n"
        "FAILED tests/t.py::test_z[[-] - IndexError: list[0\n"
        "ERROR tests/t.py\n"
        "========================= 3 failed, 1 error in 65.20s (0:01:05) ==================\n"
    )
    assert parse_outcome(["pytest"], output, 1).failing == (
        "tests/my - dir/t.py::test_y", "tests/t.py", "tests/t.py::test_x[a - b]", "tests/t.py::test_z[[-]")


def test_pytest_xdist_verbose_lines() -> None:
    output = ("[gw0] [ 50%] PASSED tests/t.py::test_a\n[gw1] [100%] FAILED tests/t.py::test_b[1]\n"
              "========================= 1 failed, 1 passed in 0.50s =========================\n")
    assert parse_outcome(["pytest", "-n2", "-v", "-rN"], output, 1) == Outcome(
        "pytest", 1, 1, 0, ("tests/t.py::test_b[1]",))


def test_pytest_no_tests_ran() -> None:
    assert parse_outcome(["pytest"], "\nno tests ran in 0.01s\n", 5) == Outcome("pytest", 0, 0, 0)


# ---------------------------------------------------------------- JUnit XML

JAVA_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="com.example.CalcTest" tests="4" failures="1" errors="1" skipped="1">
    <testcase classname="com.example.CalcTest" name="adds" time="0.01"/>
    <testcase classname="com.example.CalcTest" name="subs" time="0.01">
      <failure message="expected:&lt;2&gt; but was:&lt;8&gt;" type="AssertionError"><![CDATA[
<!DOCTYPE html> is only text inside CDATA]]></failure>
    </testcase>
    <testcase classname="com.example.CalcTest" name="divides"><error type="ArithmeticException"/></testcase>
    <testcase classname="com.example.CalcTest" name="later"><skipped/></testcase>
  </testsuite>
  <testsuite name="nested"><testsuite name="inner">
    <testcase classname="com.example.OtherTest" name="ok"/>
  </testsuite></testsuite>
</testsuites>
"""


def test_junit_generic_ids() -> None:
    assert parse_outcome(["mvn", "test"], "", 1, junit_xml=JAVA_JUNIT) == Outcome(
        "junit", passed=2, failed=2, skipped=1,
        failing=("com.example.CalcTest::divides", "com.example.CalcTest::subs"))


def test_junit_pytest_style_classname_without_pytest_suite_name() -> None:
    xml = ('<testsuite name="ci"><testcase classname="tests.unit.test_calc.TestOps" name="test_sub">'
           '<failure/></testcase><testcase classname="" name="bare"/></testsuite>')
    assert parse_outcome([], "", 1, junit_xml=xml) == Outcome(
        "junit", 1, 1, 0, ("tests/unit/test_calc.py::TestOps::test_sub",))


@pytest.mark.parametrize("xml", [
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><testsuite><testcase name="&lol3;"/></testsuite>',
    '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    '<testsuite><testcase name="&xxe;"><failure/></testcase></testsuite>',
    '<!DOCTYPE testsuite><testsuite><testcase name="a"/></testsuite>',
], ids=["entity-bomb", "external-entity", "bare-doctype"])
def test_junit_with_doctype_is_refused(xml: str) -> None:
    output = "== 3 passed in 0.1s =="  # even parseable output is not trusted next to a hostile file
    assert parse_outcome(["pytest"], output, 0, junit_xml=xml) == Outcome("exit_code")


@pytest.mark.parametrize("xml", ['<testsuite><testcase name="a">', "<html><body/></html>", "not xml"])
def test_unusable_junit_falls_back_to_output(xml: str) -> None:
    output = "1 failed, 2 passed in 0.05s\n"
    assert parse_outcome(["pytest"], output, 1, junit_xml=xml) == Outcome("pytest", 2, 1, 0)


# ---------------------------------------------------------------- go (go 1.22's formats, not captured here)

GO_PLAIN = """\
--- FAIL: TestSub (0.00s)
    calc_test.go:14: Sub(5, 3) = 8, want 2
--- FAIL: TestTable (0.00s)
    --- FAIL: TestTable/negative_numbers (0.00s)
        calc_test.go:27: got -1, want 1
FAIL
FAIL\texample.com/calc\t0.004s
ok  \texample.com/calc/internal/fmtx\t0.002s
?   \texample.com/calc/cmd/calc\t[no test files]
# example.com/calc/broken [example.com/calc/broken.test]
broken/broken_test.go:9:2: undefined: Mul
FAIL\texample.com/calc/broken [build failed]
FAIL
"""

GO_VERBOSE = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestSub
    calc_test.go:14: Sub(5, 3) = 8, want 2
--- FAIL: TestSub (0.00s)
=== RUN   TestTable
=== RUN   TestTable/positive
=== RUN   TestTable/negative_numbers
    calc_test.go:27: got -1, want 1
--- FAIL: TestTable (0.00s)
    --- PASS: TestTable/positive (0.00s)
    --- FAIL: TestTable/negative_numbers (0.00s)
=== RUN   TestSlow
    calc_test.go:33: skipping in short mode
--- SKIP: TestSlow (0.00s)
FAIL
exit status 1
"""


def go_event(action: str, test: str | None = None, package: str = "example.com/calc", **more: object) -> str:
    event: dict[str, object] = {"Time": "2024-05-01T10:00:00.123456Z", "Action": action, "Package": package}
    if test:
        event["Test"] = test
    event.update(more)
    return json.dumps(event)


GO_JSON = "\n".join([
    go_event("start"),
    go_event("run", "TestAdd"),
    go_event("output", "TestAdd", Output="=== RUN   TestAdd\n"),
    go_event("output", "TestAdd", Output="--- PASS: TestAdd (0.00s)\n"),
    go_event("pass", "TestAdd", Elapsed=0),
    go_event("run", "TestSub"),
    go_event("output", "TestSub", Output="--- FAIL: TestSub (0.00s)\n"),
    go_event("fail", "TestSub", Elapsed=0),
    go_event("skip", "TestSlow", Elapsed=0),
    go_event("output", Output="FAIL\texample.com/calc\t0.003s\n"),
    go_event("fail", Elapsed=0.003),
    go_event("fail", package="example.com/calc/broken", Elapsed=0, FailedBuild="example.com/calc/broken"),
    go_event("pass", package="example.com/calc/fmtx", Elapsed=0.001),
    "FAIL",
])


def test_go_plain_output_with_packages_and_build_failure() -> None:
    assert parse_outcome(["go", "test", "./..."], GO_PLAIN, 1) == Outcome(
        "go", passed=None, failed=4, skipped=None,
        failing=("example.com/calc/TestSub", "example.com/calc/TestTable",
                 "example.com/calc/TestTable/negative_numbers", "example.com/calc/broken"))


def test_go_verbose_single_package_without_package_line() -> None:
    assert parse_outcome(["go", "test", "-v"], GO_VERBOSE, 1) == Outcome(
        "go", passed=2, failed=3, skipped=1,
        failing=("TestSub", "TestTable", "TestTable/negative_numbers"))


def test_go_json() -> None:
    assert parse_outcome(["go", "test", "-json", "./..."], GO_JSON, 1) == Outcome(
        "go", passed=1, failed=2, skipped=1,
        failing=("example.com/calc/TestSub", "example.com/calc/broken"))


def test_go_json_with_odd_events() -> None:
    output = "\n".join(['{"Action":["fail"]}', '{"Action":"pass","Test":7}', '{"Action": "fail", "Test":',
                        go_event("fail", "TestA"), '{"Action":' + "[" * 100_000])
    assert parse_outcome(["go", "test", "-json"], output, 1) == Outcome(
        "go", passed=0, failed=1, skipped=0, failing=("example.com/calc/TestA",))


def test_go_all_passing_is_sniffed() -> None:
    output = "ok  \texample.com/calc\t0.002s\nok  \texample.com/calc/util\t(cached)\n"
    assert parse_outcome(["make"], output, 0) == Outcome("go", passed=None, failed=0, skipped=None)


def test_failing_ids_are_capped_and_sorted() -> None:
    output = "".join(f"--- FAIL: Test{n:04d} (0.00s)\n" for n in reversed(range(700)))
    outcome = parse_outcome(["go", "test"], output, 1)
    assert outcome.failed == 700
    assert outcome.failing == tuple(f"Test{n:04d}" for n in range(MAX_FAILING))


# ---------------------------------------------------------------- cargo

# --nocapture in the second binary: the status follows the test's own output.
CARGO_CAPTURED = """\
   Compiling calc v0.1.0 (/tmp/calc)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.41s
     Running unittests src/lib.rs (target/debug/deps/calc-c6626fb655a8d231)

running 4 tests
test tests::adds ... ok
test tests::slow ... ignored, needs a database
test tests::panics ... FAILED
test tests::subs ... FAILED

failures:

---- tests::panics stdout ----

thread 'tests::panics' (3893) panicked at src/lib.rs:15:27:
boom
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- tests::subs stdout ----

thread 'tests::subs' (3894) panicked at src/lib.rs:13:25:
assertion `left == right` failed
  left: 2
 right: 8


failures:
    tests::panics
    tests::subs

test result: FAILED. 1 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.12s

error: test failed, to rerun pass `--lib`
     Running tests/it.rs (target/debug/deps/it-b462ec70d69dbcd3)

running 2 tests
test integration_bad ... hello from the test

thread 'integration_bad' (8522) panicked at tests/it.rs:2:65:
assertion `left == right` failed
 right: 2
FAILED
test integration_ok ... ok

failures:

failures:

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.09s

   Doc-tests calc

running 1 test
test src/lib.rs - add (line 3) ... FAILED

failures:

---- src/lib.rs - add (line 3) stdout ----
Test executable failed (exit status: 101).

failures:
    src/lib.rs - add (line 3)

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.18s

error: 3 targets failed:
    `--lib`
    `--test it`
    `--doc`
"""
CARGO_EXPECTED = Outcome(
    "cargo", passed=2, failed=4, skipped=1,
    failing=("integration_bad", "src/lib.rs - add (line 3)", "tests::panics", "tests::subs"))

NEXTEST = """\
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.02s
────────────
 Nextest run ID 5b7c0d9e-0000-4000-8000-000000000000 with nextest profile: default
    Starting 4 tests across 2 binaries (1 test skipped)
        PASS [   0.004s] calc tests::adds
        FAIL [   0.005s] calc tests::subs
──── STDOUT:             calc tests::subs

running 1 test
test tests::subs ... FAILED

failures:

failures:
    tests::subs

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s

──── STDERR:             calc tests::subs
thread 'tests::subs' panicked at src/lib.rs:13:25:
assertion `left == right` failed
        PASS [   0.003s] calc::it integration_ok
     TIMEOUT [  60.002s] calc::it integration_slow
────────────
     Summary [  60.010s] 4 tests run: 2 passed, 1 failed, 1 timed out, 1 skipped
        FAIL [   0.005s] calc tests::subs
     TIMEOUT [  60.002s] calc::it integration_slow
error: test run failed
"""


def test_cargo_captured_output() -> None:
    assert parse_outcome(["cargo", "test"], CARGO_CAPTURED, 101) == CARGO_EXPECTED
    assert parse_outcome(["./ci.sh"], CARGO_CAPTURED, 101) == CARGO_EXPECTED


def test_cargo_failures_list_names_tests_whose_line_was_garbled() -> None:
    output = ("running 2 tests\nno newline from a printtest tests::a ... FAILED\ntest tests::b ... ok\n\n"
              "failures:\n    tests::a\n\n"
              "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n")
    assert parse_outcome(["cargo", "test"], output, 101) == Outcome("cargo", 1, 1, 0, ("tests::a",))


def test_cargo_nextest() -> None:
    assert parse_outcome(["cargo", "nextest", "run"], NEXTEST, 100) == Outcome(
        "cargo", passed=2, failed=2, skipped=1,
        failing=("calc tests::subs", "calc::it integration_slow"))


def _cargo_works() -> str | None:
    """Why cargo cannot build here (None when it can): rustup's `cargo` with no toolchain in RUSTUP_HOME fails."""
    if CARGO is None:
        return "cargo is not installed"
    proc = subprocess.run(["cargo", "--version"], capture_output=True, text=True, env=clean_env(**RUST_ENV))
    return None if proc.returncode == 0 else f"cargo has no toolchain here: {proc.stderr.strip()[:200]}"


def test_real_cargo_test(tmp_path: Path) -> None:
    why = _cargo_works()
    if why:
        pytest.skip(why)
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n')
    (tmp_path / "src" / "lib.rs").write_text(
        "/// ```\n/// assert_eq!(calc::add(1, 2), 4);\n/// ```\n"
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n"
        "#[cfg(test)]\nmod tests {\n"
        "    #[test] fn adds() { assert_eq!(super::add(2, 3), 5); }\n"
        "    #[test] fn subs() { assert_eq!(super::add(5, -3), 8); }\n"
        "    #[test] #[ignore] fn slow() {}\n}\n")
    (tmp_path / "tests" / "it.rs").write_text(
        "#[test] fn integration_bad() { assert!(calc::add(1, 1) == 3); }\n")
    env = clean_env(**RUST_ENV, CARGO_TARGET_DIR=str(tmp_path / "target"), CARGO_TERM_COLOR="never")
    output, code = run(["cargo", "test", "--offline", "--no-fail-fast"], tmp_path, env, timeout=60)
    assert code == 101, output
    assert parse_outcome(["cargo", "test", "--offline"], output, code) == Outcome(
        "cargo", passed=1, failed=3, skipped=1,
        failing=("integration_bad", "src/lib.rs - add (line 1)", "tests::subs"))


# ---------------------------------------------------------------- TAP

TAP = """\
TAP version 13
1..6
ok 1 - adds
not ok 2 - subs - really
  ---
  message: 'expected 2'
  ...
ok 3 # SKIP no database
not ok 4 - later # TODO not written yet
ok 5 - escaped \\# hash
    not ok 1 - an indented subtest line is not counted
not ok 6
# failed 2 of 6
"""


def test_tap_stream() -> None:
    assert parse_outcome(["./run-tests"], TAP, 1) == Outcome(
        "tap", passed=2, failed=2, skipped=2, failing=("2 - subs - really", "6"))


def test_tap_missing_tests_and_bail_out() -> None:
    output = "1..5\nok 1 - a\nnot ok 2 - b\nBail out! database went away\n"
    assert parse_outcome(["prove"], output, 1) == Outcome(
        "tap", passed=1, failed=5, skipped=0, failing=("2 - b", "Bail out! database went away"))


@pytest.mark.skipif(PROVE is None, reason="prove is not installed")
@pytest.mark.parametrize("verbose", [False, True])
def test_real_prove(tmp_path: Path, verbose: bool) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "basic.t").write_text(
        "use Test::More tests => 5;\nok(1, 'adds');\nok(0, 'subs - really');\n"
        "SKIP: { skip 'no db', 1; ok(1, 'db'); }\n"
        "TODO: { local $TODO = 'later'; ok(0, 'thing'); }\nok(1);\n")
    (tmp_path / "t" / "other.t").write_text("use Test::More;\nok(1, 'fine');\ndone_testing();\n")
    argv = ["prove", *(["-v"] if verbose else []), "t"]
    output, code = run(argv, tmp_path)
    outcome = parse_outcome(argv, output, code)
    assert code == 1
    assert (outcome.runner, outcome.failed) == ("tap", 1)
    if verbose:  # the TAP stream itself: the TODO test is visible and counts as skipped
        assert outcome == Outcome("tap", 3, 1, 2, ("t/basic.t::2 - subs - really",))
    else:  # only prove's summary: test numbers, the TODO test hidden among the passes
        assert outcome == Outcome("tap", 4, 1, 1, ("t/basic.t::2",))
    assert parse_outcome(["make", "test"], output, code) == outcome


# ---------------------------------------------------------------- detection and fallbacks

@pytest.mark.parametrize(("argv", "runner"), [
    (["pytest", "-q"], "pytest"),
    (["py.test"], "pytest"),
    (["/usr/bin/python3", "-m", "pytest", "tests"], "pytest"),
    (["uv", "run", "pytest"], "pytest"),
    (["sh", "-c", "cd src && python -m pytest -x"], "pytest"),
    (["go", "test", "./..."], "go"),
    (["go", "build"], None),
    (["cargo", "test", "--offline"], "cargo"),
    (["cargo", "+nightly", "nextest", "run"], "cargo"),
    (["cargo", "build"], None),
    (["prove", "-v", "t"], "tap"),
    (["make", "test"], None),
    (["sh", "-c", "echo 'unclosed"], None),
    ([], None),
])
def test_detect_runner(argv: list[str], runner: str | None) -> None:
    assert detect_runner(argv) == runner


@pytest.mark.parametrize("output", ["", "Segmentation fault (core dumped)\n",
                                    "ok\n1..x\ntest result: maybe\n"])
def test_unparseable_output_falls_back_to_exit_code(output: str) -> None:
    outcome = parse_outcome(["./run.sh"], output, 139)
    assert outcome == Outcome("exit_code")
    assert outcome.to_dict() == {"runner": "exit_code", "passed": None, "failed": None, "skipped": None,
                                 "failing": []}


def test_huge_and_pathological_output() -> None:
    lines = [f"--- PASS: TestOk{n} (0.00s)" for n in range(200_000)]
    lines += ["--- FAIL: TestBad (0.00s)", "a/" * 500_000, "{" + '"Action"' + "[" * 200_000,
              "=== short test summary info ===", "FAILED " + "x[ - " * 100_000, "ok " + "\\#" * 100_000,
              "\x1b[" + "1" * 100_000,
              "FAIL\texample.com/calc\t1.0s"]
    outcome = parse_outcome(["go", "test", "-v"], "\n".join(lines), 1)
    assert outcome == Outcome("go", passed=200_000, failed=1, skipped=0,
                              failing=("example.com/calc/TestBad",))


def test_from_dict_rejects_wrong_types() -> None:
    for bad in ({"runner": 1}, {"runner": "go", "passed": True}, {"runner": "go", "failing": "TestA"},
                {"runner": "go", "failed": "3"}):
        with pytest.raises(ValueError):
            Outcome.from_dict(bad)


# ---------------------------------------------------------------- properties

FRAGMENTS = [
    "1..3", "ok 1 - a", "not ok 2 - b # TODO x", "ok", "Bail out!", "t/a.t .. ", "--- FAIL: TestX (0.00s)",
    "    --- PASS: TestX/y (0.00s)", "FAIL\tpkg\t0.1s", "ok  \tpkg\t0.1s", "=== RUN   TestX",
    '{"Action":"fail","Package":"p","Test":"T"}', '{"Action":"fail"}', '{"Action":', '{"Action":["fail"]}',
    '{"Action":"pass","Test":7}', '[{"Action":"fail"}]', "test a ... FAILED",
    "test result: FAILED. 1 passed; 2 failed; 0 ignored", "failures:", "    a::b",
    "        FAIL [   0.003s] crate tests::x", "     Summary [   0.1s] 2 tests run: 1 passed, 1 failed",
    "=== short test summary info ===", "FAILED t.py::x[a - b] - r", "ERROR t.py", "t.py::y FAILED [ 50%]",
    "== 1 failed, 2 passed, 1 xfailed in 0.1s ==", "no tests ran in 0.0s", "Files=1, Tests=3,  0 wallclock",
    "t/a.t (Wstat: 256 Tests: 3 Failed: 1)", "  Failed tests:  1-3, 5", "  Parse errors: Bad plan",
    "\x1b[31m", "99999999999999999999 passed in 0.1s", "(less 2 skipped subtests: 1 okay)",
]
XML_FRAGMENTS = [
    "<testsuites>", '<testsuite name="pytest">', "<testsuite>", '<testcase classname="a.test_b" name="t">',
    '<testcase classname="" name="x.y">', '<testcase name="n" file="a/b.py">', "<failure/>", "<skipped/>",
    "<error>", "</error>", "</testcase>", "</testsuite>", "</testsuites>", "<!DOCTYPE x>", "&amp;", "&bad;",
    '<?xml version="1.0"?>', "<![CDATA[<]]>", "<x:testcase xmlns:x='u'/>",
]
text_st = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=25).map("\n".join)
xml_st = st.one_of(st.none(), st.text(max_size=50),
                   st.lists(st.one_of(st.sampled_from(XML_FRAGMENTS), st.text(max_size=8)), max_size=20)
                   .map("".join))
argv_st = st.lists(st.one_of(st.sampled_from(["pytest", "python", "-m", "go", "test", "cargo", "nextest",
                                              "prove", "sh", "-c", "'x"]), st.text(max_size=10)), max_size=5)
outcome_st = st.builds(
    Outcome, runner=st.sampled_from(RUNNERS),
    passed=st.none() | st.integers(min_value=0), failed=st.none() | st.integers(min_value=0),
    skipped=st.none() | st.integers(min_value=0),
    failing=st.lists(st.text(max_size=20), max_size=30).map(tuple))


def assert_well_formed(outcome: Outcome) -> None:
    assert outcome.runner in RUNNERS
    assert list(outcome.failing) == sorted(set(outcome.failing))
    assert len(outcome.failing) <= MAX_FAILING
    data = json.loads(json.dumps(outcome.to_dict()))
    assert Outcome.from_dict(data) == outcome


@settings(max_examples=300, deadline=None)
@given(argv=argv_st, output=text_st, code=st.none() | st.integers(), junit_xml=xml_st)
def test_parse_outcome_never_raises(argv: list[str], output: str, code: int | None,
                                    junit_xml: str | None) -> None:
    assert_well_formed(parse_outcome(argv, output, code, junit_xml))


@given(output=st.text())
def test_parse_outcome_never_raises_on_arbitrary_text(output: str) -> None:
    assert_well_formed(parse_outcome(["pytest"], output, 1, output))


@given(outcome=outcome_st)
def test_round_trip(outcome: Outcome) -> None:
    assert_well_formed(outcome)
    assert Outcome.from_dict(outcome.to_dict()) == outcome


def test_empty_output_is_the_exit_code_alone_and_loads_no_parser() -> None:
    import subprocess
    import sys

    code = ("import sys; from shiftgit.evidence.outcomes import parse_outcome; "
            "o = parse_outcome(['true'], '', 0); o2 = parse_outcome(['pytest'], '', 1); "
            "print(o.runner, o2.runner, sorted(m for m in sys.modules if 'parsers.' in m or m.startswith('xml')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["exit_code", "exit_code", "[]"]
    for runner in ("pytest", "go", "cargo", "tap"):  # what the shortcut stands for: no parser finds anything in ""
        from shiftgit.evidence.outcomes import _parser
        assert _parser(runner)([], True) is None and _parser(runner)([], False) is None
