"""A minimal OpenAI-compatible endpoint over transformers' continuous-batching manager, for
serve_cb.py --serve PORT (transformers serve needs fastapi and uvicorn, which the GPU machine
lacks). POST /v1/chat/completions: the messages' text, as bytes, are the prompt's token ids (the
last 512); the reply's content is the generated ids written as printable characters; usage
counts tokens. GET /v1/models lists the one model. GET /quit stops the server. Requests are
served one at a time (the engine still batches internally).

Thread-safety: one lock around the engine; the HTTP server runs handlers on its own threads.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL_NAME = "qwen2-random-cb"


def _prompt_ids(body):
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))
    return [b + 1 for b in text.encode("utf-8")][-512:] or [1]


def serve_openai(model, args, start_manager):
    manager, used = start_manager(model, args)
    lock = threading.Lock()
    counter = [0]

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code, payload):
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model"}]})
            elif self.path == "/quit":
                self._send(200, {"ok": True})
                threading.Thread(target=self.server.shutdown, daemon=True).start()
            else:
                self._send(404, {"error": {"message": "no route " + self.path}})

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": "no route " + self.path}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            except (ValueError, json.JSONDecodeError) as exc:
                return self._send(400, {"error": {"message": "bad JSON: %s" % exc}})
            ids = _prompt_ids(body)
            new = max(1, min(int(body.get("max_tokens") or 32), 64))
            with lock:
                counter[0] += 1
                rid = "http-%d" % counter[0]
                manager.add_request(ids, request_id=rid, max_new_tokens=new)
                deadline = time.time() + 60
                result = None
                while time.time() < deadline:
                    result = manager.get_result(timeout=1)
                    if (result is not None and result.request_id == rid
                            and (result.is_finished() or getattr(result, "error", None))):
                        break
                    result = None
            if result is None:
                return self._send(504, {"error": {"message": "the engine did not answer in 60 s"}})
            text = "".join(chr(32 + t % 95) for t in result.generated_tokens)
            self._send(200, {"id": rid, "object": "chat.completion", "created": int(time.time()),
                             "model": MODEL_NAME,
                             "choices": [{"index": 0, "finish_reason": "length",
                                          "message": {"role": "assistant", "content": text}}],
                             "usage": {"prompt_tokens": len(ids), "completion_tokens": len(result.generated_tokens),
                                       "total_tokens": len(ids) + len(result.generated_tokens)}})

        def log_message(self, fmt, *a):
            print("serve: " + fmt % a, flush=True)

    server = ThreadingHTTPServer(("127.0.0.1", args.serve), Handler)
    print(json.dumps({"serving": "http://127.0.0.1:%d/v1" % args.serve, "engine": used}), flush=True)
    try:
        server.serve_forever()
    finally:
        manager.stop(block=True, timeout=30)
    print(json.dumps({"served": counter[0]}), flush=True)
    return 0
