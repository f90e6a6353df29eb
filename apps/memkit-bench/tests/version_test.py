#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""apps/memkit-bench/tests/version_test.py: memkit-bench says which release it is, and 0.1's
`serve --threads` still works for 0.2.x.

Usage: version_test.py MEMKIT_BENCH VERSION

`memkit-bench --version` must print "memkit-bench VERSION"; batch mode's deprecated `--threads 3`
must warn, name --sharing-threads and set it, and the summary that run writes with --markdown must
be what `memkit-bench markdown` makes of its --json file afterwards, and name VERSION; a server started with the deprecated `--threads 3`
must warn on stderr that it is deprecated and name --workers, run 3 workers, and report VERSION in
/info.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def fail(message, proc=None):
    print("version_test: FAILED: " + message, file=sys.stderr)
    if proc is not None and proc.poll() is None:
        proc.kill()
    sys.exit(1)


def main():
    bench, version = sys.argv[1], sys.argv[2]
    out = subprocess.run([bench, "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or out.stdout.strip() != "memkit-bench " + version:
        fail("--version printed %r (status %d)" % (out.stdout, out.returncode))

    with tempfile.TemporaryDirectory() as scratch:
        results = os.path.join(scratch, "results.json")
        summary = os.path.join(scratch, "results.md")
        out = subprocess.run(
            [bench, "--workloads", "false-sharing", "--variants", "std", "--scale", "0.001",
             "--iterations", "2", "--repeat", "1", "--threads", "3", "--json", results,
             "--markdown", summary],
            capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            fail("batch --threads 3 exited with status %d: %s" % (out.returncode, out.stderr))
        with open(results) as f:
            sharing = json.load(f)["options"].get("sharing_threads")
        with open(summary) as f:
            written = f.read()
        again = subprocess.run([bench, "markdown", results], capture_output=True, text=True,
                               timeout=60)
        if again.returncode != 0 or again.stdout != written or "| std |" not in written or \
                ("| memkit | %s, commit" % version) not in written:
            fail("the run's --markdown summary differs from `markdown results.json`: %r" %
                 written[:300])
    if sharing != 3 or "--threads is deprecated" not in out.stderr or \
            "--sharing-threads" not in out.stderr:
        fail("batch --threads 3: sharing_threads %r, stderr %r" % (sharing, out.stderr[:300]))

    proc = subprocess.Popen(
        [bench, "--scale", "0.01", "serve", "--port", "0", "--threads", "3", "--warmup", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    line = ""
    while not line and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
        if proc.poll() is not None:
            fail("serve --threads 3 exited with status %d: %s" % (proc.returncode,
                                                                  proc.stderr.read()))
    match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not match:
        fail("no 'listening on' line: %r" % line, proc)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open("http://127.0.0.1:%s/info" % match.group(1), timeout=60) as r:
        info = json.loads(r.read().decode())
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        fail("the server did not stop on SIGTERM", proc)
    if info.get("version") != version:
        fail("/info version is %r, not %s" % (info.get("version"), version))
    if info.get("workers") != 3:
        fail("--threads 3 gave %r workers" % info.get("workers"))
    if "--threads is deprecated" not in err or "--workers" not in err:
        fail("no deprecation warning for --threads on stderr: %r" % err[:500])
    print("version_test: memkit-bench %s; serve --threads still sets the workers, with a "
          "deprecation warning" % version)


if __name__ == "__main__":
    main()
