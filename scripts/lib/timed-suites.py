#!/usr/bin/env python3
"""Prints the names of the test suites tagged `.timed` (`@Suite(... .tags(.timed) ...) struct Name`), joined by `|`:
scripts/test.sh runs them in a serial pass of their own and skips them in the parallel one, whatever they are called."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests")
SUITE = re.compile(r"@Suite\((?P<traits>(?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)\s*(?:(?:public|internal|private|final)\s+)*struct\s+(?P<name>\w+)")
names = []
for folder, _, files in os.walk(root):
    for file in files:
        if file.endswith(".swift"):
            for match in SUITE.finditer(open(os.path.join(folder, file), encoding="utf-8").read()):
                if re.search(r"\.tags\([^)]*\.timed\b", match.group("traits")):
                    names.append(match.group("name"))
if not names:
    sys.exit("timed-suites: no suite is tagged .timed")
print("|".join(sorted(names)))
