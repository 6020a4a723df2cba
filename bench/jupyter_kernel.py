"""Baseline for bench.mjs: the execute round trip of a bare Jupyter kernel, the way notebook-backed
sandboxes run code (Debian's python3-ipykernel and python3-jupyter-client, run by /usr/bin/python3).

Starts one local IPython kernel (no container: this is the kernel's own cost, a floor for such
sandboxes), warms it up, then reads a count per line from stdin and answers each line with a JSON
list of that many round-trip times in ms for execute("1+1"): from sending execute_request until
the kernel reports idle again, with the execute_result checked. An empty line or EOF ends it.
"""

import json
import os
import sys
import time

from jupyter_client.manager import start_new_kernel


def execute_once(client):
    started = time.perf_counter()
    msg_id = client.execute("1+1", store_history=False)
    result = None
    while True:
        msg = client.get_iopub_msg(timeout=10)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "execute_result":
            result = msg["content"]["data"]["text/plain"]
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=10)
    elapsed_ms = (time.perf_counter() - started) * 1000
    if result != "2" or reply["content"]["status"] != "ok":
        raise RuntimeError(f"kernel answered {result!r} ({reply['content']['status']})")
    return elapsed_ms


def main():
    # The kernel inherits this: it silences a debugger notice that is noise here.
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        for _ in range(20):
            execute_once(client)
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            line = line.strip()
            if not line:
                break
            samples = [execute_once(client) for _ in range(int(line))]
            print(json.dumps(samples), flush=True)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
