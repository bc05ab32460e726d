"""Start many timers in one StartTimers call, see which failed and why, then list and delete them.

Address: the first argument, else $LAWN_ADDR, else the quick-start lawnd (127.0.0.1:7070); token: $LAWN_TOKEN.
"""
import os
import sys

import lawn

address = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LAWN_ADDR", "127.0.0.1:7070")
with lawn.Client(address, token=os.environ.get("LAWN_TOKEN")) as client:
    specs = [lawn.TimerSpec("demo-batch", f"invoice-{n}", ttl=3600, payload=b"remind", replace=True)
             for n in range(5)]
    specs.append(lawn.TimerSpec("demo-batch", "", ttl=3600))  # An empty id: this item fails on its own.
    for result in client.start_many(specs):
        print(result.spec.id or "(empty id)", "started" if result.ok else f"failed: {result.error}")
    for timer in client.list("demo-batch", page_size=2):  # Pages are fetched as the loop goes.
        print("pending:", timer.id, "due", timer.deadline.isoformat())
        client.delete("demo-batch", timer.id)
    try:
        client.get("demo-batch", "invoice-0")
    except lawn.NotFound:
        print("invoice-0 is gone")
