#!/usr/bin/env python3
"""Prints the suites that took longest in a Swift Testing event stream (`--event-stream-output-path F
--event-stream-version 0`), from each suite's start to its end, with the pass's own length: where a pass's time goes.
In a parallel pass suites overlap, so a long one is either heavy or waiting (a `.serialized` suite is a chain)."""
import json
import sys

started, ended = {}, {}
first = last = None
with open(sys.argv[1], encoding="utf-8") as stream:
    for line in stream:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("kind") != "event":
            continue
        event = record["payload"]
        test, when = event.get("testID"), event.get("instant", {}).get("absolute")
        if test is None or when is None or "/" in test:
            continue  # a test, not a suite
        if event["kind"] == "testStarted":
            started[test] = when
            first = when if first is None else min(first, when)
        elif event["kind"] == "testEnded":
            ended[test] = when
            last = when if last is None else max(last, when)
spans = sorted(((ended[t] - started[t], t) for t in ended if t in started), reverse=True)
if spans and first is not None:
    shown = ", ".join(f"{name.split('.')[-1]} {seconds:.0f} s" for seconds, name in spans[:int(sys.argv[2]) if len(sys.argv) > 2 else 6])
    print(f"test.sh: the pass ran {last - first:.0f} s; its longest suites: {shown}")
