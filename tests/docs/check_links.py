#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""tests/docs/check_links.py: every relative link in the project's Markdown resolves.

Usage: check_links.py SOURCE_DIR

Reads README.md, CHANGELOG.md and every .md file under docs/ (docs/results/ included). Each link
`[text](target)` or reference `[name]: target` whose target has no scheme (http:, https:,
mailto:) must name a file or directory that exists, relative to the linking file; a `#anchor`,
alone or after a Markdown file, must name a heading of that file as GitHub renders its id
(lower case, punctuation dropped, spaces as hyphens, -1, -2 ... for repeats). Links inside code
spans and fenced code blocks are not links and are skipped. Exits 1 listing every broken link.
"""

import os
import re
import sys

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:\s+(\S+)", re.M)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def strip_fences(text):
    """\\returns `text` with fenced code blocks blanked (line numbers kept)."""
    return re.sub(r"^(```|~~~).*?^\1[^\n]*$", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.M | re.S)


def strip_code(text):
    """\\returns `text` with fenced blocks and code spans blanked (line numbers kept)."""
    return re.sub(r"`[^`\n]*`", "``", strip_fences(text))


def anchors(path, cache={}):
    """\\returns the heading ids GitHub gives the Markdown file `path`."""
    if path not in cache:
        ids, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            text = strip_fences(f.read())
        for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
            heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link's text
            slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            ids.add(slug if n == 0 else "%s-%d" % (slug, n))
        for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
            ids.add(m.group(1))
        cache[path] = ids
    return cache[path]


def documents(root):
    found = [os.path.join(root, n) for n in ("README.md", "CHANGELOG.md")]
    for directory, _, names in os.walk(os.path.join(root, "docs")):
        found += [os.path.join(directory, n) for n in sorted(names) if n.endswith(".md")]
    return [p for p in found if os.path.isfile(p)]


def main():
    root = os.path.abspath(sys.argv[1])
    broken, count = [], 0
    for doc in documents(root):
        with open(doc, encoding="utf-8") as f:
            text = strip_code(f.read())
        for m in list(LINK.finditer(text)) + list(IMAGE.finditer(text)):
            target = m.group(1) or (m.group(2) if m.lastindex and m.lastindex >= 2 else None)
            if not target or SCHEME.match(target):
                continue
            count += 1
            line = text.count("\n", 0, m.start()) + 1
            where = "%s:%d: %s" % (os.path.relpath(doc, root), line, target)
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
            if not os.path.exists(resolved):
                broken.append(where + " (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                broken.append(where + " (no such heading)")
    for b in broken:
        print("check_links: broken link " + b, file=sys.stderr)
    print("check_links: %d relative links in %d documents, %d broken" %
          (count, len(documents(root)), len(broken)))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
