"""LLM augmentation against a fake OpenAI-compatible server on 127.0.0.1: normal, malformed, timeout, 429, cache,
rate limiting and the polarity-guided prompt search."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from faircl.data.counterfactual.llm import (
    LLMAugmenter,
    LLMError,
    OpenAIChatBackend,
    ReplyParseError,
    extract_json_object,
    parse_reply,
)
from faircl.data.counterfactual import CDA, AttributeLexicon, CounterfactualTuples


class FakeLLM:
    """Scripted chat-completions server. ``script`` is a list of actions consumed one per request; when empty,
    ``default(request)`` answers. Actions: ``("ok", content)``, ``("status", code, retry_after)``, ``("sleep", s)``."""

    def __init__(self, default):
        self.script: list[tuple] = []
        self.default = default
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                action = fake.script.pop(0) if fake.script else ("ok", fake.default(body))
                if action[0] == "sleep":
                    time.sleep(action[1])
                    action = ("ok", fake.default(body))
                if action[0] == "status":
                    self.send_response(action[1])
                    if action[2] is not None:
                        self.send_header("Retry-After", str(action[2]))
                    self.end_headers()
                    self.wfile.write(b'{"error": "busy"}')
                    return
                payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": action[1]}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(payload.encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


LEX = AttributeLexicon.gender(lists="builtin", keep=None)
CDA_ = CDA(LEX)


def passage(body: dict) -> str:
    return body["messages"][-1]["content"].removeprefix("Passage: ")


def good_reply(body: dict) -> str:
    m, f, n = CDA_(passage(body))
    return json.dumps({"male": m, "female": f, "neutral": n, "confidence": 0.9})


@pytest.fixture()
def server():
    srv = FakeLLM(good_reply)
    yield srv
    srv.close()


def _backend(server, **kw):
    kw.setdefault("sleep", lambda s: None)
    return OpenAIChatBackend(base_url=server.url, model="fake-model", api_key="k123", timeout=kw.pop("timeout", 5),
                             **kw)


TEXTS = ["He is a nurse at the hospital.", "She fixed her car yesterday.", "My brother plays the piano."]


def test_normal_flow_and_request_shape(server, tmp_path):
    aug = LLMAugmenter(_backend(server), LEX, cache_dir=tmp_path)
    result = aug.augment(TEXTS)
    assert result.tuples[0] == ("He is a nurse at the hospital.", "She is a nurse at the hospital.",
                                "They are a nurse at the hospital.")
    assert result.kept == [t for t in result.tuples] and result.report.union_accuracy == 1.0
    assert result.confidences == [0.9] * 3 and result.parse_failures == result.request_failures == 0
    body = server.requests[0]
    assert body["model"] == "fake-model" and body["temperature"] == 0.0
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles[-1] == "user" and roles.count("assistant") == len(aug.examples)
    assert "gender" in body["messages"][0]["content"] and '"neutral"' in body["messages"][0]["content"]
    assert server.headers[0]["Authorization"] == "Bearer k123"


def test_cache_makes_rerun_free(server, tmp_path):
    LLMAugmenter(_backend(server), LEX, cache_dir=tmp_path).augment(TEXTS)
    n = len(server.requests)
    again = LLMAugmenter(_backend(server), LEX, cache_dir=tmp_path).augment(TEXTS)
    assert len(server.requests) == n and again.cache_hits == 3
    # A different model is a different request: not served from the cache.
    other = OpenAIChatBackend(base_url=server.url, model="other", sleep=lambda s: None)
    LLMAugmenter(other, LEX, cache_dir=tmp_path).augment(TEXTS[:1])
    assert len(server.requests) == n + 1


def test_malformed_reply_is_counted(server):
    server.script = [("ok", "Sure! Here you go: male=He, female=She"),
                     ("ok", '{"male": "He runs.", "female": "She runs."}')]
    result = LLMAugmenter(_backend(server), LEX).augment(TEXTS)
    assert result.parse_failures == 2 and result.tuples[:2] == [None, None] and result.tuples[2] is not None
    assert result.passed == [False, False, True] and len(result.kept) == 1
    assert "no JSON object" in result.errors[0] and "neutral" in result.errors[1]


def test_timeout_is_retried_then_fails(server):
    sleeps: list[float] = []
    server.script = [("sleep", 1.5)]
    backend = _backend(server, timeout=0.5, max_retries=2, backoff=0.25, sleep=sleeps.append)
    out = backend.complete(LLMAugmenter(backend, LEX).messages(TEXTS[0]))
    assert parse_reply(out, ("male", "female", "neutral"))[1] == 0.9
    assert backend.requests_sent == 2 and sleeps == [0.25]
    server.script = [("sleep", 1.5)] * 3
    backend = _backend(server, timeout=0.5, max_retries=1, backoff=0.25, sleep=sleeps.append)
    with pytest.raises(LLMError, match="failed after 2 attempts; last error: timeout"):
        backend.complete([{"role": "user", "content": "Passage: He ran."}])
    # In an augmentation pass a failed request is counted, not fatal (unless asked).
    server.script = [("sleep", 1.5)] * 2
    result = LLMAugmenter(_backend(server, timeout=0.5, max_retries=1), LEX).augment(TEXTS[:2])
    assert result.request_failures == 1 and result.tuples[0] is None and result.tuples[1] is not None
    time.sleep(1.2)  # let the sleeping handlers finish before the server closes


def test_429_backoff_with_retry_after(server):
    sleeps: list[float] = []
    server.script = [("status", 429, 3), ("status", 503, None), ("status", 429, None)]
    backend = _backend(server, max_retries=4, backoff=0.5, sleep=sleeps.append)
    out = backend.complete([{"role": "user", "content": "Passage: He ran."}])
    assert json.loads(out)["female"] == "She ran."
    assert sleeps == [3.0, 1.0, 2.0]  # Retry-After, then exponential backoff 0.5 · 2^attempt
    server.script = [("status", 400, None)]
    with pytest.raises(LLMError, match="HTTP 400"):
        backend.complete([{"role": "user", "content": "Passage: He ran."}])


def test_rate_limit_spaces_requests(server):
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s):
        sleeps.append(s)
        now[0] += s

    backend = _backend(server, requests_per_minute=120, sleep=sleep, clock=lambda: now[0])
    for _ in range(3):
        backend.complete([{"role": "user", "content": "Passage: He ran."}])
        now[0] += 0.1
    assert sleeps == pytest.approx([0.4, 0.4])


def test_prompt_search_adds_confident_failures(server):
    hard = "Her uncle met the king."

    def stubborn(body):
        text = passage(body)
        taught = any(m["content"] == f"Passage: {hard}" for m in body["messages"][:-1])
        m, f, n = CDA_(text)
        if text == hard and not taught:
            f = m  # a confident mistake: the female version keeps the male words
            return json.dumps({"male": m, "female": f, "neutral": n, "confidence": 0.95})
        return json.dumps({"male": m, "female": f, "neutral": n, "confidence": 0.6})

    server.default = stubborn
    aug = LLMAugmenter(_backend(server), LEX)
    n_examples = len(aug.examples)
    final, history = aug.prompt_search(TEXTS + [hard], rounds=3)
    assert history[0].report.kept == 3 and not history[0].passed[3]
    assert aug.examples[-1][0] == hard and len(aug.examples) == n_examples + 1
    assert aug.examples[-1][1]["female"] == "Her aunt met the queen."
    assert final.report.kept == 4 and len(history) == 2  # nothing left to correct after round 2


def test_parse_reply_variants():
    versions = ("male", "female", "neutral")
    fenced = 'Here:\n```json\n{"male": "He", "female": "She", "neutral": "They", "confidence": 85}\n```'
    assert parse_reply(fenced, versions) == (("He", "She", "They"), 0.85)
    assert extract_json_object('x {"a": "}{"} y') == {"a": "}{"}
    with pytest.raises(ReplyParseError, match="confidence"):
        parse_reply('{"male": "He", "female": "She", "neutral": "They"}', versions)
    with pytest.raises(ReplyParseError, match="outside"):
        parse_reply('{"male": "He", "female": "She", "neutral": "They", "confidence": -2}', versions)


def test_backend_config_errors(monkeypatch):
    for var in ("FAIRCL_LLM_BASE_URL", "OPENAI_BASE_URL", "FAIRCL_LLM_MODEL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="no LLM endpoint"):
        OpenAIChatBackend()
    monkeypatch.setenv("FAIRCL_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="no LLM model"):
        OpenAIChatBackend()
    monkeypatch.setenv("FAIRCL_LLM_MODEL", "m")
    assert OpenAIChatBackend().base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="http"):
        OpenAIChatBackend(base_url="ftp://127.0.0.1")


def test_datamodule_llm_source(server, tmp_path):
    texts = [f"He worked as a {job} for {n} years." for n, job in enumerate(["nurse", "pilot", "chef", "judge"] * 3, 2)]
    dm = CounterfactualTuples(source="llm", inline_texts=texts, word_lists="builtin", keep_words=None,
                              llm_prompt_rounds=2,
                              split_sentences=False, llm_base_url=server.url, llm_model="fake",
                              llm_cache_dir=str(tmp_path), val_fraction=0.25, test_fraction=0.25, batch_size=2)
    dm.setup("fit")
    assert dm.polarity_report.kept == 12 and sum(len(s) for s in dm.splits.values()) == 12
    batch = next(iter(dm.train_dataloader()))
    assert batch["x"][1][0].startswith("She worked")
