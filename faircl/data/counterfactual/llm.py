"""LLM-assisted counterfactual augmentation (CCD paper §3.3, Algorithm 1) behind a pluggable backend.

An :class:`AugmentBackend` turns chat messages into a reply string. :class:`OpenAIChatBackend` talks to any
OpenAI-compatible ``/chat/completions`` endpoint with the standard library only (``urllib``): base URL, model and key
come from arguments or the environment (``FAIRCL_LLM_BASE_URL`` / ``OPENAI_BASE_URL``, ``FAIRCL_LLM_MODEL`` /
``OPENAI_MODEL``, ``FAIRCL_LLM_API_KEY`` / ``OPENAI_API_KEY``); it retries timeouts, connection errors, 429 and 5xx
with exponential backoff (honouring ``Retry-After``) and spaces requests to a requests-per-minute limit.

:class:`LLMAugmenter` builds the paper's prompt (task description + few-shot examples, Table 10), asks for every
attribute version plus the neutral one and a confidence ``c`` (eq. 5: ``h(S, T, P) = [S^{a_1}, …, S^{a_G}, S^n], c``),
parses the reply, runs the polarity check (eq. 6) and caches every reply on disk under the hash of its request, so
a rerun costs nothing. :meth:`LLMAugmenter.prompt_search` is the polarity-guided prompt search: K rounds of
"augment, find the failed tuple with the highest confidence, add its corrected version to the examples".
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from faircl.data.counterfactual.cda import CDA, PolarityReport, polarity_check
from faircl.data.counterfactual.lexicon import NEUTRAL, AttributeLexicon

Message = dict[str, str]


class LLMError(RuntimeError):
    """The endpoint failed (after retries) or answered with a non-retryable error."""


class ReplyParseError(ValueError):
    """A reply did not contain the expected JSON object."""


class AugmentBackend(Protocol):
    """Anything that answers a list of chat messages with a string."""

    model: str

    def complete(self, messages: list[Message]) -> str:
        """The assistant's reply text."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follow a redirect: urllib would repeat the ``Authorization`` header to the new location, which may be
    another host. The 3xx reply surfaces as an ``HTTPError`` and is rejected."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # urllib's hook: no new request
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _split_credentials(url: str) -> tuple[str, str | None]:
    """``(url without user:password@, "user:password" or None)``."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), urllib.parse.unquote(userinfo)


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` (no credentials, path or query), for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return f"{parts.scheme}://{host}" if parts.scheme else "<relative URL>"


def _env(*names: str) -> str | None:
    for n in names:
        v = os.environ.get(n)
        if v:
            return v
    return None


class OpenAIChatBackend:
    """OpenAI-compatible chat-completions client (``POST {base_url}/chat/completions``), standard library only.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (default: ``$FAIRCL_LLM_BASE_URL`` or ``$OPENAI_BASE_URL``).
        model: model name (default: ``$FAIRCL_LLM_MODEL`` or ``$OPENAI_MODEL``).
        api_key: bearer token (default: ``$FAIRCL_LLM_API_KEY`` or ``$OPENAI_API_KEY``; none is sent if unset).
            ``user:password@`` in ``base_url`` is taken out of the URL and sent as HTTP basic auth instead (when no
            key is set).
        temperature: sampling temperature (0 = as deterministic as the server allows).
        timeout: seconds per request.
        max_retries: retries after the first attempt (timeouts, connection errors, 429, 5xx).
        backoff: first retry delay in seconds, doubled each retry up to ``max_backoff``.
        requests_per_minute: space requests at least ``60 / rpm`` seconds apart (``None`` = no limit).
        sleep / clock: injectable for tests.

    Secrets. Redirects are never followed (urllib would repeat the ``Authorization`` header to the new location,
    possibly another host): a 3xx reply is an :class:`LLMError` naming only the target's origin. The key and the URL
    credentials never appear in an error message, the ``repr`` or a reply (any echo of them is replaced by
    ``[REDACTED]``); messages name the endpoint without credentials.
    """

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 temperature: float = 0.0, timeout: float = 60.0, max_retries: int = 4, backoff: float = 1.0,
                 max_backoff: float = 30.0, requests_per_minute: float | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        raw_url = (base_url or _env("FAIRCL_LLM_BASE_URL", "OPENAI_BASE_URL") or "").rstrip("/")
        if not raw_url:
            raise ValueError("no LLM endpoint: pass base_url or set FAIRCL_LLM_BASE_URL (or OPENAI_BASE_URL)")
        self.base_url, self._userinfo = _split_credentials(raw_url)
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        self.model = model or _env("FAIRCL_LLM_MODEL", "OPENAI_MODEL") or ""
        if not self.model:
            raise ValueError("no LLM model: pass model or set FAIRCL_LLM_MODEL (or OPENAI_MODEL)")
        self.api_key = api_key if api_key is not None else _env("FAIRCL_LLM_API_KEY", "OPENAI_API_KEY")
        self.temperature, self.timeout = temperature, timeout
        self.max_retries, self.backoff, self.max_backoff = max_retries, backoff, max_backoff
        self.min_interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self.sleep, self.clock = sleep, clock
        self._last_request: float | None = None
        self.requests_sent = 0

    def __repr__(self) -> str:
        key = "[REDACTED]" if self.api_key else None
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, api_key={key!r})"

    def _secrets(self) -> list[str]:
        """The key, the URL's ``user:password`` and each part, as sent and in every encoding a server may echo:
        URL-quoted, JSON-escaped and base64 (standard and URL-safe, with and without padding: the Basic
        ``Authorization`` header carries ``base64(user:password)``)."""
        out = []
        for secret in (self.api_key, self._userinfo, *(self._userinfo or "").split(":", 1)):
            if secret and len(secret) >= 4:
                out += [secret, urllib.parse.quote(secret, safe=""), json.dumps(secret)[1:-1]]
                raw = secret.encode("utf-8")
                for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
                    text = encoded.decode("ascii")
                    out += [text, text.rstrip("="), urllib.parse.quote(text, safe="")]
        return sorted({o for o in out if len(o) >= 4}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the key or the URL credentials replaced by ``[REDACTED]``."""
        for secret in self._secrets():
            text = text.replace(secret, "[REDACTED]")
        return text

    def payload(self, messages: list[Message]) -> dict:
        """The JSON body sent for ``messages`` (also the cache key's content)."""
        return {"model": self.model, "messages": messages, "temperature": self.temperature}

    def _wait_for_rate_limit(self) -> None:
        if self.min_interval and self._last_request is not None:
            wait = self._last_request + self.min_interval - self.clock()
            if wait > 0:
                self.sleep(wait)
        self._last_request = self.clock()

    def complete(self, messages: list[Message]) -> str:
        body = json.dumps(self.payload(messages)).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        elif self._userinfo:
            headers["Authorization"] = "Basic " + base64.b64encode(self._userinfo.encode("utf-8")).decode("ascii")
        url = f"{self.base_url}/chat/completions"
        try:
            return self.redact(self._post(url, body, headers))
        except LLMError as e:
            raise LLMError(self.redact(str(e))) from None

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> str:
        last_error = ""
        for attempt in range(self.max_retries + 1):
            self._wait_for_rate_limit()
            self.requests_sent += 1
            delay = min(self.max_backoff, self.backoff * 2 ** attempt)
            try:
                req = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with _OPENER.open(req, timeout=self.timeout) as resp:
                    data = json.loads(resp.read().decode("utf-8"))
                try:
                    return str(data["choices"][0]["message"]["content"])
                except (KeyError, IndexError, TypeError):
                    raise LLMError(f"{url}: reply has no choices[0].message.content: "
                                   f"{self.redact(str(data))[:200]}") from None
            except urllib.error.HTTPError as e:
                if 300 <= e.code < 400:
                    target = e.headers.get("Location", "") if e.headers else ""
                    raise LLMError(f"{url}: HTTP {e.code} redirect to {_origin(target)} not followed (the request "
                                   "carries credentials); set base_url to the final endpoint") from None
                if e.code != 429 and e.code < 500:
                    detail = self.redact(e.read().decode("utf-8", "replace"))[:200]  # redact, then cut
                    raise LLMError(f"{url}: HTTP {e.code} {e.reason}: {detail!r}") from None
                last_error = f"HTTP {e.code}"
                retry_after = e.headers.get("Retry-After") if e.headers else None
                if retry_after is not None:
                    try:
                        delay = max(0.0, float(retry_after))
                    except ValueError:
                        pass
            except (socket.timeout, TimeoutError) as e:
                last_error = f"timeout after {self.timeout}s ({e})"
            except urllib.error.URLError as e:
                if isinstance(e.reason, (socket.timeout, TimeoutError)):
                    last_error = f"timeout after {self.timeout}s"
                else:
                    last_error = f"connection error: {e.reason}"
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise LLMError(f"{url}: the reply is not JSON ({type(e).__name__} at position "
                               f"{getattr(e, 'pos', getattr(e, 'start', '?'))})") from None
            if attempt < self.max_retries:
                self.sleep(delay)
        raise LLMError(f"{url}: failed after {self.max_retries + 1} attempts; last error: {last_error}")


# ------------------------------------------------------------------------------------------------ prompt
TASK_TEMPLATE = (
    "Task: rewrite the passage once for each of these groups: {groups}, and once in a neutral form. Only locate "
    "the words that carry {attribute} information (pronouns, nouns, titles, names) and replace them with their "
    "counterparts from the target group; the neutral version uses words that carry no {attribute} information "
    "(e.g. they, person, parent). Leave every other word unchanged. Answer with one JSON object with the keys "
    "{keys} and \"confidence\" (a number between 0 and 1: how sure you are that every version is correct), and "
    "nothing else."
)

#: Few-shot examples after the CCD paper's Table 10 (shortened): (original, {version: text}).
DEFAULT_EXAMPLES: tuple[tuple[str, dict[str, str]], ...] = (
    ("Rwanda has the highest female legislators in the world.",
     {"male": "Rwanda has the highest male legislators in the world.",
      "female": "Rwanda has the highest female legislators in the world.",
      "neutral": "Rwanda has the highest legislators in the world."}),
    ("When a kid arrived, accompanied by a doting father, the prophet's son.",
     {"male": "When a kid arrived, accompanied by a doting father, the prophet's son.",
      "female": "When a kid arrived, accompanied by a doting mother, the prophet's daughter.",
      "neutral": "When a kid arrived, accompanied by a doting parent, the prophet's child."}),
    ("Mike embarked on a fascinating experiment with sons.",
     {"male": "Mike embarked on a fascinating experiment with sons.",
      "female": "Mary embarked on a fascinating experiment with daughters.",
      "neutral": "The leader embarked on a fascinating experiment with offspring."}),
    ("Orban appointed a police officer as his secretary, most strong-minded male Democrat.",
     {"male": "Orban appointed a police officer as his secretary, most strong-minded male Democrat.",
      "female": "Olivia appointed a police officer as her secretary, most strong-minded female Democrat.",
      "neutral": "They appointed a police officer as their secretary, most strong-minded Democrat."}),
)


def extract_json_object(text: str) -> dict:
    """The first JSON object in ``text`` (code fences and surrounding prose allowed)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, flags=re.S)
    candidates = [fenced.group(1)] if fenced else []
    start = text.find("{")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                esc = (ch == "\\") and not esc
                if ch == '"' and not esc:
                    in_str = False
                continue
            if ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    candidates.append(text[start:i + 1])
                    break
        start = text.find("{", start + 1) if not candidates else -1
    for c in candidates:
        try:
            obj = json.loads(c)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise ReplyParseError(f"no JSON object in the reply: {text[:200]!r}")


def parse_reply(text: str, versions: Sequence[str]) -> tuple[tuple[str, ...], float]:
    """``(versions in order, confidence in [0, 1])`` from a reply; percentages (``85``) are divided by 100."""
    obj = extract_json_object(text)
    missing = [v for v in versions if not isinstance(obj.get(v), str) or not obj.get(v).strip()]
    if missing:
        raise ReplyParseError(f"reply lacks text for version(s) {missing}: keys {sorted(obj)}")
    conf = obj.get("confidence", None)
    try:
        c = float(conf)
    except (TypeError, ValueError):
        raise ReplyParseError(f"reply has no numeric confidence (got {conf!r})") from None
    if 1.0 < c <= 100.0:
        c /= 100.0
    if not 0.0 <= c <= 1.0:
        raise ReplyParseError(f"confidence {conf!r} is outside [0, 1]")
    return tuple(obj[v].strip() for v in versions), c


# ------------------------------------------------------------------------------------------------ augmenter
@dataclass
class AugmentResult:
    """Outcome of one augmentation pass.

    Attributes:
        texts: the source texts, in order.
        tuples: per text, the parsed tuple (``None`` if the reply failed to parse or the request failed).
        confidences: per text, the model's confidence (``nan`` when missing).
        passed: per text, whether the tuple passed the polarity check.
        report: polarity report over the parsed tuples.
        parse_failures / request_failures: replies that could not be parsed / requests that failed.
        cache_hits: replies served from the disk cache.
    """

    texts: list[str]
    tuples: list[tuple[str, ...] | None]
    confidences: list[float]
    passed: list[bool]
    report: PolarityReport
    parse_failures: int = 0
    request_failures: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[tuple[str, ...]]:
        """Tuples that parsed and passed the polarity check."""
        return [t for t, ok in zip(self.tuples, self.passed) if t is not None and ok]


class LLMAugmenter:
    """Counterfactual tuples by an LLM, polarity-checked, with an on-disk reply cache.

    Args:
        backend: an :class:`AugmentBackend` (e.g. :class:`OpenAIChatBackend`).
        lexicon: attribute word lists: the group names and the polarity check's ``V^a``.
        examples: few-shot examples ``(original, {version: text})`` (default: :data:`DEFAULT_EXAMPLES`, gender).
        cache_dir: directory of cached replies (``None`` = no cache).
        attribute: the attribute's name in the task description.
        fail_on_request_error: raise instead of counting a request that failed after its retries.
    """

    def __init__(self, backend: AugmentBackend, lexicon: AttributeLexicon,
                 examples: Sequence[tuple[str, dict[str, str]]] | None = None, cache_dir: str | Path | None = None,
                 attribute: str = "gender", fail_on_request_error: bool = False) -> None:
        self.backend = backend
        self.lexicon = lexicon
        self.versions = (*lexicon.groups, NEUTRAL)
        self.examples = list(DEFAULT_EXAMPLES if examples is None else examples)
        for i, (_, ex) in enumerate(self.examples):
            missing = [v for v in self.versions if v not in ex]
            if missing:
                raise ValueError(f"few-shot example {i} lacks version(s) {missing}")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.attribute = attribute
        self.fail_on_request_error = fail_on_request_error

    def messages(self, text: str) -> list[Message]:
        """System task description, then each example as a user/assistant turn, then the passage."""
        keys = ", ".join(f'"{v}"' for v in self.versions)
        task = TASK_TEMPLATE.format(groups=", ".join(self.lexicon.groups), attribute=self.attribute, keys=keys)
        msgs: list[Message] = [{"role": "system", "content": task}]
        for original, ex in self.examples:
            msgs.append({"role": "user", "content": f"Passage: {original}"})
            answer = {v: ex[v] for v in self.versions} | {"confidence": 1.0}
            msgs.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
        msgs.append({"role": "user", "content": f"Passage: {text}"})
        return msgs

    def _cache_key(self, messages: list[Message]) -> str:
        payload = getattr(self.backend, "payload", None)
        content = payload(messages) if callable(payload) else {"model": getattr(self.backend, "model", ""),
                                                                 "messages": messages}
        return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()

    def reply(self, text: str) -> tuple[str, bool]:
        """The raw reply for ``text`` and whether it came from the cache."""
        msgs = self.messages(text)
        path = None
        if self.cache_dir is not None:
            path = self.cache_dir / f"{self._cache_key(msgs)}.json"
            if path.is_file():
                return json.loads(path.read_text(encoding="utf-8"))["reply"], True
        out = self.backend.complete(msgs)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"text": text, "reply": out}, ensure_ascii=False), encoding="utf-8")
            tmp.replace(path)
        return out, False

    def augment(self, texts: Sequence[str]) -> AugmentResult:
        """Ask for every version of each text, parse, and polarity-check (failures are kept, flagged and counted)."""
        tuples: list[tuple[str, ...] | None] = []
        conf: list[float] = []
        parse_failures = request_failures = hits = 0
        errors: list[str] = []
        for i, text in enumerate(texts):
            try:
                raw, hit = self.reply(text)
                hits += hit
            except LLMError as e:
                if self.fail_on_request_error:
                    raise
                request_failures += 1
                errors.append(f"text {i}: {e}")
                tuples.append(None)
                conf.append(float("nan"))
                continue
            try:
                tup, c = parse_reply(raw, self.versions)
            except ReplyParseError as e:
                parse_failures += 1
                errors.append(f"text {i}: {e}")
                tuples.append(None)
                conf.append(float("nan"))
                continue
            tuples.append(tup)
            conf.append(c)
        parsed = [t for t in tuples if t is not None]
        _, report, flags = polarity_check(parsed, self.lexicon)
        it = iter(flags)
        passed = [next(it) if t is not None else False for t in tuples]
        return AugmentResult(list(texts), tuples, conf, passed, report, parse_failures, request_failures, hits,
                             errors)

    def prompt_search(self, texts: Sequence[str], rounds: int = 10,
                      correct: Callable[[str, tuple[str, ...] | None], dict[str, str]] | None = None
                      ) -> tuple[AugmentResult, list[AugmentResult]]:
        """Polarity-guided prompt search (Algorithm 1, K = ``rounds``).

        Each round augments ``texts``; if it is not the last round, the failed tuple with the highest confidence
        (not used before) is corrected and added to the few-shot examples. The paper corrects by hand;
        ``correct(text, failed_tuple) -> {version: text}`` does it here (default: :class:`~faircl.data.counterfactual.cda.CDA`
        with this lexicon, i.e. a rule-based correction; pass a function that asks a person to label by hand).

        Returns:
            ``(result of the last round, results of every round)``; ``self.examples`` holds the added examples.
        """
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        cda = CDA(self.lexicon)
        correct = correct or (lambda text, _tup: dict(zip(self.versions, cda(text))))
        used: set[str] = {ex[0] for ex in self.examples}
        history: list[AugmentResult] = []
        for k in range(1, rounds + 1):
            result = self.augment(texts)
            history.append(result)
            if k == rounds:
                break
            failed = [(c, i) for i, (t, ok, c) in enumerate(zip(result.tuples, result.passed, result.confidences))
                      if t is not None and not ok and texts[i] not in used]
            if not failed:
                break
            _, i = max(failed)
            fixed = correct(texts[i], result.tuples[i])
            missing = [v for v in self.versions if v not in fixed]
            if missing:
                raise ValueError(f"the correction of text {i} lacks version(s) {missing}")
            self.examples.append((texts[i], {v: fixed[v] for v in self.versions}))
            used.add(texts[i])
        return history[-1], history


__all__ = ["AugmentBackend", "OpenAIChatBackend", "LLMAugmenter", "AugmentResult", "LLMError", "ReplyParseError",
           "parse_reply", "extract_json_object", "TASK_TEMPLATE", "DEFAULT_EXAMPLES"]
