#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Real programs under a preloaded malloc (tests/replacement/CMakeLists.txt registers each).

Usage: real_programs.py PROGRAM --preload LIB --min-allocations N --tool PATH [--debug]
                        [-- ARGS...]

Each program runs twice in a fresh temporary directory: on glibc, and with LD_PRELOAD=LIB and
MEMKIT_OPTIONS=stats:1 (stats:1,debug:1 with --debug). Both runs must exit 0 with identical standard output, the preloaded run
must print memkit's statistics line(s) on stderr ({"memkit":{...}}, one per process) counting at
least N allocations in all, and no other line starting "memkit:". PROGRAM is one of:
  python        --tool python3: programs/python_workload.py with PYTHONMALLOC=malloc
  sqlite        --tool sqlite3: 100,000 inserts, an index and queries on an in-memory database
  git           --tool git: init, add, commit, log and a gc in a new repository
  threads-fork  --tool programs/threads_fork (built): threads, remote frees and fork()
  churn         --tool programs/churn (built): judged only in the preloaded run (its output
                holds timings); ARGS go to it, and the glibc run adds --report-only
"""

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_SECONDS = 120

SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, s TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
  INSERT INTO t SELECT x, (x * 7919) % 100003, printf('row-%d-%s', x, hex(x * x)) FROM c;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_s ON t(s);
SELECT count(*), sum(k), min(s), max(s) FROM t;
SELECT k, s FROM t WHERE k BETWEEN 500 AND 520 ORDER BY k;
SELECT k % 10, count(*), avg(length(s)) FROM t GROUP BY 1 ORDER BY 1;
SELECT length(group_concat(s, ',')) FROM (SELECT s FROM t ORDER BY s);
UPDATE t SET s = s || '-updated' WHERE k % 3 = 0;
DELETE FROM t WHERE k % 5 = 0;
SELECT count(*), sum(length(s)) FROM t;
SELECT a.k, b.id FROM t AS a JOIN t AS b ON a.k = b.id WHERE a.id < 50 ORDER BY 1, 2;
"""


def python_steps(tool, _args):
    return [([tool, os.path.join(HERE, "programs", "python_workload.py")], None,
             {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"})]


def sqlite_steps(tool, _args):
    return [([tool, ":memory:"], SQL, {})]


def write_tree(home, edit):
    """The repository's files, written by this script, so that the git test runs only git."""
    for i in range(300):
        path = os.path.join(home, "repo", f"dir{i % 7}", f"file{i}.txt")
        if edit and i % 7 == 5:
            if i == 5:
                os.remove(path)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lines = "".join(f"file {i} line {n}\n" for n in range(40 * (i % 17 + 1)))
        with open(path, "w") as f:
            f.write(lines + ("changed\n" if edit and i % 7 == 3 else ""))


def git_steps(tool, _args):
    git = [tool, "-C", "repo"]
    return [
        ([tool, "init", "-q", "-b", "main", "repo"], None, {}),
        lambda home: write_tree(home, edit=False),
        (git + ["add", "-A"], None, {}),
        (git + ["commit", "-q", "-m", "first"], None, {}),
        lambda home: write_tree(home, edit=True),
        (git + ["commit", "-q", "-a", "-m", "second"], None, {}),
        (git + ["log", "--stat", "--format=%H %an <%ae> %ad %s"], None, {}),
        (git + ["diff", "--numstat", "HEAD~1", "HEAD"], None, {}),
        (git + ["gc", "-q"], None, {}),
        (git + ["count-objects", "-v"], None, {}),
        (git + ["fsck", "--no-progress"], None, {}),
    ]


def binary_steps(tool, args):
    return [([tool] + args, None, {})]


PROGRAMS = {
    "python": python_steps,
    "sqlite": sqlite_steps,
    "git": git_steps,
    "threads-fork": binary_steps,
    "churn": binary_steps,
}

# Output independent of the machine, the user and the clock.
FIXED_ENV = {
    "LC_ALL": "C",
    "TZ": "UTC",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "memkit test",
    "GIT_AUTHOR_EMAIL": "test@memkit.invalid",
    "GIT_AUTHOR_DATE": "2020-02-02T12:00:00Z",
    "GIT_COMMITTER_NAME": "memkit test",
    "GIT_COMMITTER_EMAIL": "test@memkit.invalid",
    "GIT_COMMITTER_DATE": "2020-02-02T12:00:00Z",
    "GIT_PAGER": "cat",
    # One delta-search thread, so that gc packs the same way every time (count-objects prints the
    # pack's size).
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "pack.threads",
    "GIT_CONFIG_VALUE_0": "1",
}


def run(steps, preload, options):
    """Runs `steps` (each a command, or a function of the directory) in a new directory; returns
    (status, stdout, stderr) of the first failure or of all of them."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MEMKIT_OPTIONS")}
    env.update(FIXED_ENV)
    if preload:
        env.update({"LD_PRELOAD": preload, "MEMKIT_OPTIONS": options})
    out, err = [], []
    with tempfile.TemporaryDirectory(prefix="memkit-real-") as home:
        env["HOME"] = home
        for step in steps:
            if callable(step):
                step(home)
                continue
            argv, stdin, extra = step
            p = subprocess.run(argv, input=stdin, cwd=home, env=dict(env, **extra),
                               capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
            out.append(p.stdout)
            err.append(p.stderr)
            if p.returncode != 0:
                return p.returncode, "".join(out), "".join(err) + f"\n(failed: {argv})\n"
    return 0, "".join(out), "".join(err)


def stats_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith('{"memkit":')]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", choices=sorted(PROGRAMS))
    parser.add_argument("--preload", required=True)
    parser.add_argument("--min-allocations", type=int, required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--debug", action="store_true")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    o = parser.parse_args(argv[:split])
    o.args = argv[split + 1:]
    steps = PROGRAMS[o.program](o.tool, o.args)
    failures = []

    glibc_steps = steps
    if o.program == "churn":
        glibc_steps = binary_steps(o.tool, o.args + ["--report-only"])
    g_status, g_out, g_err = run(glibc_steps, None, None)
    m_status, m_out, m_err = run(steps, o.preload, "stats:1,debug:1" if o.debug else "stats:1")
    print(f"glibc run: status {g_status}, {len(g_out)} bytes of output")
    print(f"preloaded run: status {m_status}, {len(m_out)} bytes of output")
    if o.program == "churn":
        print("glibc:\n" + g_out + "preloaded:\n" + m_out, end="")
    if g_status != 0:
        failures.append(f"the glibc run failed (status {g_status}):\n{g_err}")
    if stats_lines(g_err):
        failures.append("the glibc run printed memkit statistics: the preload leaked into it")
    if m_status != 0:
        failures.append(f"the preloaded run failed (status {m_status}):\n{m_err}")
    if not o.program == "churn" and g_out != m_out:
        diff = difflib.unified_diff(g_out.splitlines(), m_out.splitlines(), "glibc", "preloaded",
                                    lineterm="")
        failures.append("the outputs differ:\n" + "\n".join(list(diff)[:40]))

    lines = stats_lines(m_err)
    allocations = 0
    for line in lines:
        try:
            allocations += json.loads(line)["memkit"]["allocations"]
        except (ValueError, KeyError, TypeError) as e:
            failures.append(f"unreadable statistics line ({e}): {line}")
    print(f"memkit statistics: {len(lines)} process(es), {allocations} allocations")
    for line in lines[:3]:
        print("  " + line)
    if allocations < o.min_allocations:
        failures.append(f"memkit served {allocations} allocations, expected at least "
                        f"{o.min_allocations}: it did not serve the program")
    reports = [line for line in m_err.splitlines() if line.startswith("memkit:")]
    if reports:
        failures.append("memkit reported:\n" + "\n".join(reports[:20]))

    for f in failures:
        print("FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
