"""Two test peers in one small HTTP server on a free loopback port:

- an OTLP/HTTP trace receiver: `POST /v1/traces` takes an `ExportTraceServiceRequest` in
  protobuf and decodes it with the official generated messages of the `opentelemetry-proto`
  package (PyPI); a body that does not decode is answered 400;
- an upstream model stub: `POST /v1/chat/completions` answers a fixed text in OpenAI's
  streaming format (or as one JSON object), recording the `traceparent` header it was sent.

`GET /received` returns what arrived: {"spans": [...], "upstream": [...], "exports": [...]}.
Every POST to another path than the upstream's is taken as a trace export, whatever its path
(an exporter told a traces URL must use it as is); each is listed in `exports` with its path,
`Content-Encoding` (a gzip body is unzipped before decoding), headers, arrival time
(monotonic seconds), the span ids it carried and the status it was answered. Options make it
misbehave for the first exports, to test an exporter's retries and timeout:
`--fail-first N --fail-status 503 --retry-after 2` answers the first N exports with that
status (and `Retry-After`) without keeping their spans; `--delay-first N --delay S` waits S
seconds before answering each of the first N. The first line on standard output is
`listening <port>`."""

import argparse
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

ANSWER = ["Paris ", "is the ", "capital."]

lock = threading.Lock()
spans = []
upstream = []
exports = []
options = argparse.Namespace(fail_first=0, fail_status=503, retry_after=None, delay_first=0, delay=0.0)


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def attributes(pairs):
    return {pair.key: any_value(pair.value) for pair in pairs}


def decode(body):
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    decoded = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                decoded.append(
                    {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "attributes": attributes(span.attributes),
                        "status": span.status.code,
                        "resource": resource,
                    }
                )
    return decoded


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        return self.rfile.read(int(self.headers.get("content-length", "0")))

    def send(self, status, content_type, payload):
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        if self.path != "/received":
            return self.send(404, "text/plain", b"not found")
        with lock:
            payload = json.dumps({"spans": spans, "upstream": upstream, "exports": exports}).encode()
        self.send(200, "application/json", payload)

    def do_POST(self):
        if self.path == "/v1/chat/completions":
            return self.complete(json.loads(self.body()))
        self.export()

    def export(self):
        arrived = time.monotonic()
        encoding = self.headers.get("content-encoding")
        body = self.body()
        try:
            decoded = decode(gzip.decompress(body) if encoding == "gzip" else body)
        except Exception as error:  # a malformed export is the server's bug: say so
            return self.send(400, "text/plain", str(error).encode())
        with lock:
            number = len(exports)
            record = {
                "path": self.path,
                "content_encoding": encoding,
                "headers": {name.lower(): value for name, value in self.headers.items()},
                "at": arrived,
                "span_ids": [span["span_id"] for span in decoded],
                "status": 200,
            }
            exports.append(record)
            failing = number < options.fail_first
            if failing:
                record["status"] = options.fail_status
            else:
                spans.extend(decoded)
        if number < options.delay_first:
            time.sleep(options.delay)
        try:
            if failing:
                self.send_response(options.fail_status)
                if options.retry_after is not None:
                    self.send_header("retry-after", options.retry_after)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send(200, "application/x-protobuf", reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the exporter gave up waiting (its timeout), as it may

    def complete(self, request):
        with lock:
            upstream.append(
                {
                    "traceparent": self.headers.get("traceparent"),
                    "model": request.get("model"),
                }
            )
        usage = {
            "prompt_tokens": 21,
            "completion_tokens": 3,
            "total_tokens": 24,
            "prompt_tokens_details": {"cached_tokens": 16},
        }
        if not request.get("stream"):
            answer = {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "model": request.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "".join(ANSWER)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
            return self.send(200, "application/json", json.dumps(answer).encode())
        chunks = []
        for text in ANSWER:
            chunks.append({"choices": [{"index": 0, "delta": {"content": text}}]})
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        chunks.append({"choices": [], "usage": usage})
        events = "".join(
            "data: " + json.dumps({"id": "chatcmpl-stub", "object": "chat.completion.chunk", **chunk}) + "\n\n"
            for chunk in chunks
        )
        self.send(200, "text/event-stream", (events + "data: [DONE]\n\n").encode())


def main():
    global options
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-status", type=int, default=503)
    parser.add_argument("--retry-after")
    parser.add_argument("--delay-first", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    options = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
