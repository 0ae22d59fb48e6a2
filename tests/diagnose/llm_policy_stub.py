#!/usr/bin/python3
"""An OpenAI-compatible chat-completions stub that answers like a model following truffld's Stage II
policy, reading only the step summary (J_s) in the user message.

For manual end-to-end runs of truffld-diagnose with --llm on, without a GPU or network:

    /usr/bin/python3 tests/diagnose/llm_policy_stub.py --port 8765 --stats /tmp/stub.json &
    truffld-diagnose merged/ -o diag/ --llm on --llm-url http://127.0.0.1:8765
    kill %1; cat /tmp/stub.json   # requests, max simultaneous requests, bytes received

Answers use json (stdlib only). "usage" reports tokens as bytes/4 (a rough stand-in).
Optional: --reject-json-schema answers 400 to response_format json_schema (llama.cpp-like);
--fail-every N answers 429 (Retry-After: 0) to every Nth request; --inject-name NAME adds NAME
(not an operator of the step) to every abnormal answer, as a confused or manipulated model would.
--port 0 picks a free port; the first stdout line names it. The statistics count requests that
carried an "Authorization: Bearer ..." header ("authorized") but never record the key.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def decide_calibrated(js, inject_name=None):
    """Peer-mode summaries: keep the statistical verdict, name every candidate (the documented
    default of the calibrated prompt)."""
    names = [c["name"] for c in js["candidates"]]
    if inject_name:
        names.append(inject_name)
    abnormal = js["statistical_verdict"] == "abnormal" and bool(names)
    return {"step_anomaly": abnormal, "op_error_names": names if abnormal else [],
            "rationale": "p = %g below threshold %g" % (js["p_value"], js["threshold"])}


def decide(js, inject_name=None):
    if "candidates" in js:
        return decide_calibrated(js, inject_name)
    parent, strong, weak = {}, [], []
    s = 0  # strong anomalies are counted per operator instance
    for op in js["operators"]:
        parent[op["name"]] = op["parent"] or ""
        s += op["strong_instances"]
        if op["strong_instances"] > 0:
            strong.append(op["name"])
        elif op["weak_instances"] > 0:
            weak.append(op["name"])
    if js["view"] == "horizontal":
        normal = s <= 1
    else:
        normal = s < 3 and s / max(1, js["ops_count"]) < 0.10
    if normal:
        return {"step_anomaly": False, "op_error_names": [], "rationale": "few strong anomalies"}
    out = list(dict.fromkeys(strong))
    strong_parents = {parent[n] for n in strong if parent[n]}
    out += [n for n in weak if parent[n] in strong_parents and n not in out]
    i = 0
    while i < len(out):
        p = parent.get(out[i], "")
        if p and p in parent and p not in out:
            out.append(p)
        i += 1
    if inject_name:
        out.append(inject_name)
    return {"step_anomaly": True, "op_error_names": out, "rationale": "%d strong anomalies" % s}


class Stats:
    lock = threading.Lock()
    requests = in_flight = max_in_flight = bytes_in = rejected = throttled = authorized = 0


def make_handler(args):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *unused):
            pass

        def reply(self, status, obj, headers=()):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            with Stats.lock:
                Stats.requests += 1
                Stats.bytes_in += n
                if self.headers.get("Authorization", "").startswith("Bearer ") and \
                        len(self.headers.get("Authorization", "")) > len("Bearer "):
                    Stats.authorized += 1
                Stats.in_flight += 1
                Stats.max_in_flight = max(Stats.max_in_flight, Stats.in_flight)
                index = Stats.requests
            try:
                req = json.loads(body)
                if args.fail_every and index % args.fail_every == 0:
                    with Stats.lock:
                        Stats.throttled += 1
                    return self.reply(429, {"error": "slow down"}, [("Retry-After", "0")])
                if args.reject_json_schema and req.get("response_format", {}).get("type") == "json_schema":
                    with Stats.lock:
                        Stats.rejected += 1
                    return self.reply(400, {"error": {"message": "json_schema not supported"}})
                js = json.loads(req["messages"][1]["content"])
                content = json.dumps(decide(js, args.inject_name))
                self.reply(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": content}}],
                                 "usage": {"prompt_tokens": n // 4, "completion_tokens": len(content) // 4}})
            finally:
                with Stats.lock:
                    Stats.in_flight -= 1

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=8765, help="TCP port on 127.0.0.1 (default 8765)")
    ap.add_argument("--stats", help="write request statistics as JSON here on exit")
    ap.add_argument("--reject-json-schema", action="store_true")
    ap.add_argument("--fail-every", type=int, default=0)
    ap.add_argument("--inject-name", help="add this name to every abnormal answer")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args))

    def stop(*unused):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("llm_policy_stub listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()
    stats = {k: getattr(Stats, k) for k in
             ("requests", "max_in_flight", "bytes_in", "rejected", "throttled", "authorized")}
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(stats, f)
    print(json.dumps(stats), file=sys.stderr)


if __name__ == "__main__":
    main()
