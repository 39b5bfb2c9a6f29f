"""The LLM backend never leaks its key or URL credentials: redirects (to another origin), echoing servers, malformed
JSON, hangs, 429 / 500 against fake servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from faircl.data.counterfactual.llm import LLMAugmenter, LLMError, OpenAIChatBackend
from faircl.data.counterfactual import AttributeLexicon

KEY = "sk-SECRET-0123456789abcdef"
PASSWORD = "pw-HIDDEN-42"


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()


class Server:
    """``handler(req) -> (status, headers, body)`` for POST and GET; every request's headers are recorded, and
    ``dropped`` counts the replies the client had gone before they could be sent (it timed out)."""

    def __init__(self, handler):
        self.handler, self.seen, self.dropped = handler, [], 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                outer.seen.append((self.command, dict(self.headers)))
                status, headers, body = outer.handler(self)
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    # the client gave up first (a timeout test): nothing to answer, and nothing to report
                    outer.dropped += 1

            do_POST = do_GET = _serve

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def servers():
    made = []

    def make(handler):
        made.append(Server(handler))
        return made[-1]

    yield make
    for s in made:
        s.close()


def backend(url: str, **kw) -> OpenAIChatBackend:
    kw.setdefault("api_key", KEY)
    return OpenAIChatBackend(base_url=url, model="m", sleep=lambda s: None, timeout=kw.pop("timeout", 5),
                             max_retries=kw.pop("max_retries", 1), **kw)


def no_secret(text: str) -> None:
    assert KEY not in text and PASSWORD not in text, text


def test_redirect_to_another_origin_is_not_followed(servers):
    other = servers(lambda r: (200, {"Content-Type": "application/json"}, completion("from the other host")))
    main = servers(lambda r: (302, {"Location": f"{other.url}/chat/completions"}, b""))
    with pytest.raises(LLMError, match="redirect") as info:
        backend(main.url).complete([{"role": "user", "content": "hi"}])
    no_secret(str(info.value))
    assert f"127.0.0.1:{other.port}" in str(info.value)
    assert other.seen == []                      # the key never reached the other origin
    assert main.seen[0][1]["Authorization"] == f"Bearer {KEY}"


def test_key_echoed_in_error_body_is_redacted(servers):
    srv = servers(lambda r: (401, {}, f"bad key {r.headers['Authorization']}".encode()))
    with pytest.raises(LLMError, match="401") as info:
        backend(srv.url).complete([{"role": "user", "content": "hi"}])
    no_secret(str(info.value))
    assert "[REDACTED]" in str(info.value)


def test_key_echoed_in_completion_stays_out_of_result_and_cache(servers, tmp_path):
    srv = servers(lambda r: (200, {}, completion(f"echo {r.headers['Authorization']} "
                                                  '{"male": "he", "female": "she", "neutral": "they"}')))
    aug = LLMAugmenter(backend(srv.url), AttributeLexicon.gender(lists="builtin", keep=None), cache_dir=tmp_path)
    result = aug.augment(["He is here."])
    for f in tmp_path.iterdir():
        no_secret(f.read_text())
    no_secret(repr(result))
    assert result.parse_failures == 1             # no confidence: parse error message also redacted
    no_secret(" ".join(result.errors))


def test_malformed_json_hang_and_server_errors_leak_nothing(servers):
    bad = servers(lambda r: (200, {}, b"{not json " + KEY.encode()))
    with pytest.raises(LLMError, match="not JSON") as info:
        backend(bad.url).complete([{"role": "user", "content": "x"}])
    no_secret(str(info.value))

    def hang(r):
        time.sleep(1.0)
        return 200, {}, completion("late")

    slow = servers(hang)
    with pytest.raises(LLMError, match="timeout") as info:
        backend(slow.url, timeout=0.2, max_retries=1).complete([{"role": "user", "content": "x"}])
    no_secret(str(info.value))
    for code in (429, 500):
        srv = servers(lambda r, c=code: (c, {"Retry-After": "0"}, KEY.encode()))
        with pytest.raises(LLMError, match=f"HTTP {code}") as info:
            backend(srv.url, max_retries=2).complete([{"role": "user", "content": "x"}])
        no_secret(str(info.value))
        assert len(srv.seen) == 3


def test_url_credentials_become_basic_auth_and_never_show(servers):
    srv = servers(lambda r: (404, {}, r.headers["Authorization"].encode() + b" " + PASSWORD.encode()))
    url = srv.url.replace("http://", f"http://alice:{PASSWORD}@")
    b = backend(url, api_key="")
    assert PASSWORD not in b.base_url
    no_secret(repr(b))
    with pytest.raises(LLMError, match="404") as info:
        b.complete([{"role": "user", "content": "x"}])
    no_secret(str(info.value))
    assert srv.seen[0][1]["Authorization"].startswith("Basic ")
    no_secret(repr(backend(srv.url)))


def _encodings(secret: str) -> list[str]:
    import base64
    import urllib.parse

    raw = secret.encode()
    b64 = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [secret, urllib.parse.quote(secret, safe=""), *b64, *(b.rstrip("=") for b in b64)]


@pytest.mark.parametrize("echo", ["header", "decoded_header", "long_body"])
def test_echoed_basic_auth_header_is_redacted_in_every_encoding(servers, echo):
    """A server that echoes the Basic ``Authorization`` header (base64 of ``user:password``), with or without its
    padding, or past the first 200 characters of its reply, leaks neither the userinfo nor any encoding of it."""
    def reply(r):
        token = r.headers["Authorization"].split(" ", 1)[1]
        body = {"header": f"you sent Basic {token}", "decoded_header": f"token={token.rstrip('=')}",
                "long_body": "x" * 190 + token}[echo]
        return 403, {}, body.encode()

    srv = servers(reply)
    b = backend(srv.url.replace("http://", f"http://alice:{PASSWORD}@"), api_key="")
    with pytest.raises(LLMError, match="403") as info:
        b.complete([{"role": "user", "content": "x"}])
    message = str(info.value)
    for secret in (f"alice:{PASSWORD}", PASSWORD):
        for form in _encodings(secret):
            assert form not in message, (form, message)
    import base64

    token = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert token[:8] not in message, message  # not even a prefix cut at the 200-character limit
