"""Start a timer and receive it when it fires. Runs against the quick-start lawnd (README): 127.0.0.1:7070,
or the address given as the first argument or in $LAWN_ADDR."""
import os
import sys

import lawn

client = lawn.Client(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LAWN_ADDR", "127.0.0.1:7070"))
client.start("demo", "hello", ttl=2, payload=b"hi", replace=True)
with client.subscribe("demo") as expirations:
    for exp in expirations:  # Each is acked when the loop moves on, or the block is left.
        print(exp.timer.id, exp.timer.payload, "late" if exp.late else "on time", "attempt", exp.attempt)
        if exp.timer.id == b"hello":
            break
