#!/usr/bin/env python3
"""Prints the tests a Swift Testing event stream (`swift test --event-stream-output-path F --event-stream-version 0`)
shows as started and not ended: what a test run that was stopped for taking too long was waiting for."""
import json
import sys

running = {}
with open(sys.argv[1], encoding="utf-8") as stream:
    for line in stream:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the last line, cut off when the run was stopped
        if record.get("kind") != "event":
            continue
        event = record["payload"]
        test = event.get("testID")
        if event["kind"] in ("testStarted", "testCaseStarted"):
            running[(test, event["kind"])] = event.get("instant", {}).get("absolute")
        elif event["kind"] in ("testEnded", "testCaseEnded"):
            running.pop((test, event["kind"].replace("Ended", "Started")), None)
for (test, kind), started in running.items():
    if kind == "testStarted":
        print(f"still running: {test}")
