"""DNS rebinding against the console of a real D (mocksaas, a D on loopback without a console
token, a sim cell, RabbitMQ) in headless Chromium. The browser resolves a foreign name,
``rebind.example``, to 127.0.0.2, where the attacker's server answers on the D's port number
with its page; then the name "rebinds": every new connection to it reaches the D (relayed
byte for byte, as when the attacker's DNS starts answering 127.0.0.1). The page's own-origin
fetches of the console then reach the D naming ``rebind.example`` in ``Host``: the D refuses
them (421) and the page reads no transcript. Opened under that name the console is refused
too, a page of another origin cannot frame it, and the same browser at
``http://localhost:<port>/ui`` reads the transcript as usual."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.acceptance.chromium import headless_chromium
from tests.acceptance.dispatcher.harness import Scenario
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.acceptance, pytest.mark.browser, pytest.mark.rabbitmq]
SECRET = "transcript-only-for-the-operator-5f1c"
TASK = "rebinding-task"
CALLEE = "15550001238"
SCRIPT = {  # for own_cell: every callee answers and says the secret
    "version": 1,
    "rules": [],
    "default": {"outcome": "answered", "ring_ms": 50, "turns": [SECRET], "recording": False},
    "time_scale": 0.1,
}
FOREIGN = "rebind.example"
ATTACKER = "127.0.0.2"
ATTACK_PAGE = b"<html><body><h1>a page of rebind.example</h1></body></html>"
FETCH = """
const done = arguments[arguments.length - 1];
Promise.all(["/ui/panels/calls", "/status", "/ui"].map(
  (path) => fetch(path).then(async (r) => [r.status, await r.text()])
)).then(done, (e) => done([[0, String(e)]]));
"""


class RebindingName:
    """The attacker's server for ``rebind.example`` on ``ATTACKER``:``port``: it answers
    its page to requests sent before :meth:`rebind`, then relays every connection whose
    request comes after it to the D."""

    def __init__(self, port: int, target: int) -> None:
        self.target = target
        self.rebound = threading.Event()
        self.listener = socket.create_server((ATTACKER, port))
        threading.Thread(target=self._accept, daemon=True).start()

    def rebind(self) -> None:
        self.rebound.set()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            # Decided by when the request arrives, not when the connection opened: Chromium
            # may open a connection ahead of its request (a preconnect) before the rebinding.
            first = client.recv(65536)
            if not self.rebound.is_set():
                head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                client.sendall(head + b"Content-Length: %d\r\n\r\n" % len(ATTACK_PAGE))
                client.sendall(ATTACK_PAGE)
                return
            with socket.create_connection(("127.0.0.1", self.target)) as d:
                d.sendall(first)
                back = threading.Thread(target=_pipe, args=(d, client), daemon=True)
                back.start()
                _pipe(client, d)
                back.join(10)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    rules = f"--host-resolver-rules=MAP {FOREIGN} {ATTACKER}"
    with headless_chromium(tmp_path / "chromium", arguments=[rules]) as driver:
        yield driver


@pytest.fixture
def framing_page() -> Iterator[Any]:
    """A page of another origin (127.0.0.1 on another port) that frames a given URL."""
    served: dict[str, bytes] = {}

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the handler's protocol
            body = served.get("page", b"")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def frame(url: str) -> str:
        served["page"] = f'<html><body><iframe id="d" src="{url}"></iframe></body></html>'.encode()
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield frame
    server.shutdown()


def test_a_rebinding_page_reads_nothing_from_the_console(
    scene: Scenario, browser: WebDriver, framing_page: Any
) -> None:
    s = scene
    s.sip(max_concurrent_calls=10, allowed_targets=[CALLEE])
    s.task(TASK, max_concurrent_calls=10)
    s.quota(max_concurrent_calls=10)
    s.start()
    s.calls(TASK, callees=[CALLEE])
    s.wait_results(1, 30, event_type="call.result")
    port = s.http_port

    browser.get(f"http://localhost:{port}/ui#calls")
    wait_for(lambda: SECRET in browser.page_source, 15, "the transcript on the console")

    attacker = RebindingName(port, port)
    try:
        browser.get(f"http://{FOREIGN}:{port}/")
        assert "a page of rebind.example" in browser.page_source
        attacker.rebind()
        answers = browser.execute_async_script(FETCH)
        assert [status for status, _ in answers] == [421, 421, 421], answers
        assert not any(SECRET in text for _, text in answers)
        assert all("misdirected_request" in text for _, text in answers)
        browser.get(f"http://{FOREIGN}:{port}/ui")
        page = browser.find_element(By.TAG_NAME, "body").text
        assert "misdirected_request" in page and SECRET not in browser.page_source
    finally:
        attacker.close()

    browser.get(framing_page(f"http://localhost:{port}/ui"))
    browser.switch_to.frame(browser.find_element(By.ID, "d"))
    framed = browser.page_source
    browser.switch_to.default_content()
    assert SECRET not in framed and "outcome-chart" not in framed
